//! Month names and abbreviations: the one table the date parser and invoice2data's date
//! formats read.

use crate::fold::fold_str;

/// Month names and abbreviations, folded (lower case, no accents), per month: English,
/// French, German, Dutch, Spanish, Italian, Portuguese and Polish (nominative and genitive).
pub const MONTHS: [&[&str]; 12] = [
    &[
        "january", "jan", "janvier", "janv", "januar", "januari", "enero", "ene", "gennaio", "gen",
        "janeiro", "styczen", "stycznia",
    ],
    &[
        "february",
        "feb",
        "fevrier",
        "fev",
        "fevr",
        "febr",
        "februar",
        "februari",
        "febrero",
        "febbraio",
        "fevereiro",
        "luty",
        "lutego",
    ],
    &[
        "march", "mar", "mars", "marz", "mrz", "maart", "mrt", "marzo", "marco", "marzec", "marca",
    ],
    &[
        "april", "apr", "avril", "avr", "abril", "abr", "aprile", "kwiecien", "kwietnia",
    ],
    &[
        "may", "mai", "mei", "mayo", "maggio", "mag", "maio", "maj", "maja",
    ],
    &[
        "june", "jun", "juin", "juni", "junio", "giugno", "giu", "junho", "czerwiec", "czerwca",
    ],
    &[
        "july", "jul", "juillet", "juil", "juli", "julio", "luglio", "lug", "julho", "lipiec",
        "lipca",
    ],
    &[
        "august", "aug", "aout", "augustus", "agosto", "ago", "sierpien", "sierpnia",
    ],
    &[
        "september",
        "sep",
        "sept",
        "septembre",
        "septiembre",
        "setiembre",
        "settembre",
        "set",
        "setembro",
        "wrzesien",
        "wrzesnia",
    ],
    &[
        "october",
        "oct",
        "octobre",
        "oktober",
        "okt",
        "octubre",
        "ottobre",
        "ott",
        "outubro",
        "out",
        "pazdziernik",
        "pazdziernika",
    ],
    &[
        "november",
        "nov",
        "novembre",
        "noviembre",
        "novembro",
        "listopad",
        "listopada",
    ],
    &[
        "december",
        "dec",
        "decembre",
        "dezember",
        "dez",
        "diciembre",
        "dic",
        "dicembre",
        "dezembro",
        "grudzien",
        "grudnia",
    ],
];

/// Each month's English name, in calendar order: what a date is shown as.
pub const ENGLISH: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// The month a name or abbreviation stands for, 1-based, whatever its case and accents
/// (`Février`, `FÉVR.`, `fevrier`), a full stop after it allowed.
pub fn month_number(word: &str) -> Option<u32> {
    let folded = fold_str(word.trim_end_matches('.'));
    MONTHS
        .iter()
        .position(|names| names.contains(&folded.as_str()))
        .map(|i| i as u32 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_month_spelling_names_one_month_and_is_stored_folded() {
        let all: Vec<&str> = MONTHS
            .iter()
            .flat_map(|names| names.iter().copied())
            .collect();
        for name in &all {
            assert_eq!(all.iter().filter(|n| *n == name).count(), 1, "{name}");
            assert_eq!(&fold_str(name), name, "{name} must be stored folded");
        }
        assert_eq!(month_number("dec"), Some(12));
        assert_eq!(month_number("AOÛT"), Some(8));
        assert_eq!(month_number("Févr."), Some(2));
        assert_eq!(month_number("Smarch"), None);
    }
}
