//! Decisions on the hard dossiers (`tests/fixtures/hard/dossiers/`, written by
//! `scripts/gen-hard-fixtures`): phone photos, faxes, stamped scans, monospaced documents,
//! stacked-caption forms, and one dossier mixing them, each submitted as a case to the real
//! `ironclad all` exactly as the dossiers of `tests/fixtures/decisions/` are (same rig, same
//! API calls). Every page is OCRed except the stacked dossiers submitted as text PDFs.
//!
//! The closing table gives, per dossier, the decision expected (what `workflows/trade.yaml`'s
//! rules give on a perfect reading) and the one got with its failing rules; per kind, the
//! outcomes right, and apart from the other misses the two that matter most: **wrongly
//! BLOCKED** (BLOCKED, expected otherwise: a shipment stopped for nothing) and **wrongly
//! READY** (READY, expected otherwise: a discrepancy let through). Both must be 0 and the
//! outcomes right at least [`MIN_OUTCOMES_RIGHT`]; `IRONCLAD_HARD_REPORT_ONLY=1` prints the
//! table without asserting them, while the reading work that reaches them is under way.
//!
//! By default a bounded subset runs (see [`DEFAULT_DOSSIERS`]); `IRONCLAD_FULL_DECISIONS=1`
//! runs every dossier:
//!
//! ```text
//! cargo test --test decisions hard_dossiers -- --nocapture
//! IRONCLAD_FULL_DECISIONS=1 cargo test --test decisions hard_dossiers -- --nocapture
//! IRONCLAD_HARD_REPORT_ONLY=1 IRONCLAD_FULL_DECISIONS=1 cargo test --test decisions hard_dossiers -- --nocapture
//! IRONCLAD_HARD_REPORT_ONLY=1 IRONCLAD_HARD_DOSSIERS=stamp-04,fax-02 cargo test --test decisions hard_dossiers -- --nocapture
//! ```
//!
//! A wrongly decided case is printed with every rule result, whose messages name the readings.

use super::*;

/// The dossiers run by default: one of each kind with a discrepancy to find and one of each
/// kind that is consistent, so both wrong directions are exercised.
const DEFAULT_DOSSIERS: &[&str] = &[
    "photo-01",
    "photo-03",
    "fax-01",
    "fax-03",
    "stamp-01",
    "stamp-03",
    "mono-01",
    "mono-03",
    "stacked-01",
    "stacked-03",
    "mixed-01",
];

/// Least share of dossiers whose decision is the expected one: what the reading gives today
/// (24/26 of every dossier, 11/11 of the default subset, with a label whose start a fax lost
/// read again on its row, on 2026-12-07; 22/26 and 10/11 with stamps faded by default and a
/// container number found by its check digit, on 2026-12-07; 21/26 with stamps faded and ink
/// without words read again on 2026-12-05; 17/26 and 7/11
/// with the second look and the rules' OCR gaps; 9/26 and 5/11 when the fixtures were added),
/// the lesser rounded down; see tests/fixtures/README.md. The target is 0.97, with no dossier
/// wrongly BLOCKED or wrongly READY (asserted apart, and met).
const MIN_OUTCOMES_RIGHT: f64 = 0.92;

/// Longest wait for every hard case to settle: each page is OCRed, on a shared CI host.
const HARD_SETTLE: Duration = Duration::from_secs(900);

fn hard_dir() -> PathBuf {
    Path::new(ROOT).join("tests/fixtures/hard/dossiers")
}

/// A hard dossier's truth: the decisions fixtures' schema plus its kind.
struct HardDossier {
    dir: PathBuf,
    kind: String,
    truth: Truth,
}

#[derive(Deserialize)]
struct KindOnly {
    hard_kind: String,
}

fn load_hard() -> Result<Vec<HardDossier>> {
    let dir = hard_dir();
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir)
        .with_context(|| format!("reading {} (run scripts/gen-hard-fixtures)", dir.display()))?
    {
        let path = entry?.path();
        let file = path.join("truth.json");
        if !file.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&file)?;
        let truth: Truth =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", file.display()))?;
        let kind: KindOnly =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", file.display()))?;
        out.push(HardDossier {
            dir: path,
            kind: kind.hard_kind,
            truth,
        });
    }
    out.sort_by(|a, b| a.truth.variant.cmp(&b.truth.variant));
    ensure!(
        out.len() >= 20,
        "expected the hard dossiers of scripts/gen-hard-fixtures in {}, found {}",
        dir.display(),
        out.len()
    );
    Ok(out)
}

fn full_run() -> bool {
    std::env::var("IRONCLAD_FULL_DECISIONS").is_ok_and(|v| v == "1")
}

fn report_only() -> bool {
    std::env::var("IRONCLAD_HARD_REPORT_ONLY").is_ok_and(|v| v == "1")
}

/// What one dossier came to.
struct Outcome {
    variant: String,
    kind: String,
    expected: String,
    expected_rules: Vec<String>,
    got: String,
    rules: Vec<String>,
    seconds: f64,
    /// Every rule result, printed under a wrongly decided case: the message says which
    /// readings led there.
    results: String,
}

impl Outcome {
    fn right(&self) -> bool {
        self.got == self.expected
    }
    fn wrongly_blocked(&self) -> bool {
        self.got == "BLOCKED" && self.expected != "BLOCKED"
    }
    fn wrongly_ready(&self) -> bool {
        self.got == "READY" && self.expected != "READY"
    }
}

/// Per-kind counts for the table.
#[derive(Default)]
struct Tally {
    total: usize,
    right: usize,
    exact: usize,
    wrongly_blocked: usize,
    wrongly_ready: usize,
    other: usize,
}

impl Tally {
    fn add(&mut self, o: &Outcome) {
        self.total += 1;
        if o.right() {
            self.right += 1;
            self.exact += usize::from(o.rules == o.expected_rules);
        } else if o.wrongly_blocked() {
            self.wrongly_blocked += 1;
        } else if o.wrongly_ready() {
            self.wrongly_ready += 1;
        } else {
            self.other += 1;
        }
    }
}

fn render(outcomes: &[Outcome], elapsed: Duration, scope: &str) -> String {
    let mut out = format!(
        "== hard dossiers ({scope}): {} cases through ironclad all, settled after {:.1}s ==\n",
        outcomes.len(),
        elapsed.as_secs_f64()
    );
    out += &format!(
        "{:<12} {:<8} {:<16} {:<16} {:>7}  failing rules (expected -> got)\n",
        "dossier", "kind", "expected", "got", "settled"
    );
    for o in outcomes {
        let mark = if o.wrongly_blocked() {
            "  WRONGLY BLOCKED"
        } else if o.wrongly_ready() {
            "  WRONGLY READY"
        } else if !o.right() {
            "  miss"
        } else {
            ""
        };
        out += &format!(
            "{:<12} {:<8} {:<16} {:<16} {:>6.0}s  [{}] -> [{}]{mark}\n",
            o.variant,
            o.kind,
            o.expected,
            o.got,
            o.seconds,
            o.expected_rules.join(", "),
            o.rules.join(", ")
        );
        if o.wrongly_blocked() || o.wrongly_ready() {
            out += &o.results;
            out.push('\n');
        }
    }
    let mut kinds: Vec<&str> = Vec::new();
    for o in outcomes {
        if !kinds.contains(&o.kind.as_str()) {
            kinds.push(&o.kind);
        }
    }
    out += &format!(
        "{:<8} {:>6} {:>7} {:>16} {:>14} {:>12}\n",
        "kind", "right", "exact", "wrongly BLOCKED", "wrongly READY", "other miss"
    );
    let mut all = Tally::default();
    for kind in kinds {
        let mut t = Tally::default();
        for o in outcomes.iter().filter(|o| o.kind == kind) {
            t.add(o);
            all.add(o);
        }
        out += &tally_line(kind, &t);
    }
    out += &tally_line("all", &all);
    out
}

fn tally_line(kind: &str, t: &Tally) -> String {
    format!(
        "{kind:<8} {:>6} {:>7} {:>16} {:>14} {:>12}\n",
        format!("{}/{}", t.right, t.total),
        format!("{}/{}", t.exact, t.total),
        t.wrongly_blocked,
        t.wrongly_ready,
        t.other
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hard_dossiers_outcomes_through_the_api() {
    let _turn = ocr_turn().await;
    let rig = Rig::new().await.expect("rig");
    let mut server = rig.start().expect("starting ironclad all");
    let outcome = hard_scenario(&rig, &mut server).await;
    rig.finish(server, outcome).await;
}

async fn hard_scenario(rig: &Rig, server: &mut Server) -> Result<()> {
    let started = Instant::now();
    let mut dossiers = load_hard()?;
    let declared = workflow_rule_ids()?;
    for d in &dossiers {
        for id in d
            .truth
            .expected
            .failing_rules
            .iter()
            .filter(|id| !id.starts_with("safeguard_"))
        {
            ensure!(
                declared.contains(id),
                "[{}] expects rule {id}, which workflows/trade.yaml does not declare \
                 (its rules: {declared:?}); update scripts/gen-hard-fixtures",
                d.truth.variant
            );
        }
    }
    let named = std::env::var("IRONCLAD_HARD_DOSSIERS").unwrap_or_default();
    let scope = if !named.trim().is_empty() {
        let names: Vec<&str> = named.split(',').map(str::trim).collect();
        dossiers.retain(|d| names.contains(&d.truth.variant.as_str()));
        ensure!(
            !dossiers.is_empty(),
            "IRONCLAD_HARD_DOSSIERS={named} names no hard dossier"
        );
        format!("IRONCLAD_HARD_DOSSIERS={named}")
    } else if full_run() {
        "every dossier".to_owned()
    } else {
        dossiers.retain(|d| DEFAULT_DOSSIERS.contains(&d.truth.variant.as_str()));
        ensure!(
            dossiers.len() == DEFAULT_DOSSIERS.len(),
            "the default hard dossiers {DEFAULT_DOSSIERS:?} are not all in {}",
            hard_dir().display()
        );
        "default subset; IRONCLAD_FULL_DECISIONS=1 for every dossier".to_owned()
    };

    let api = Api::ready(rig, server).await?;
    let mut cases = Vec::new();
    for d in &dossiers {
        cases.push(api.submit(&d.dir, &d.truth).await?);
    }

    // Every case is polled in turn until all are decided (or FAILED), so each one's settling
    // time is its own.
    let submitted = Instant::now();
    let deadline = submitted + HARD_SETTLE;
    let mut settled: Vec<Option<(Value, f64)>> = vec![None; cases.len()];
    while settled.iter().any(Option::is_none) {
        for (slot, id) in settled.iter_mut().zip(&cases) {
            if slot.is_some() {
                continue;
            }
            let case = api.case(id).await?;
            if is_settled(&case) {
                *slot = Some((case, submitted.elapsed().as_secs_f64()));
            }
        }
        let waiting: Vec<&str> = dossiers
            .iter()
            .zip(&settled)
            .filter(|(_, s)| s.is_none())
            .map(|(d, _)| d.truth.variant.as_str())
            .collect();
        ensure!(
            Instant::now() < deadline,
            "hard cases not settled within {HARD_SETTLE:?}: {waiting:?}\n{}",
            server.log_tail(40)
        );
        if !waiting.is_empty() {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    let mut outcomes = Vec::new();
    let mut failures = Vec::new();
    for (d, slot) in dossiers.iter().zip(settled) {
        let (case, seconds) = slot.context("every case settled")?;
        let decision = &case["decision"];
        let got = if case["status"] == "FAILED" {
            "FAILED".to_owned()
        } else {
            decision["status"].as_str().unwrap_or("-").to_owned()
        };
        if got == "FAILED" {
            failures.push(format!(
                "[{}] case FAILED ({}): a hard dossier must be read, however badly",
                d.truth.variant, case["status_reason"]
            ));
        }
        outcomes.push(Outcome {
            variant: d.truth.variant.clone(),
            kind: d.kind.clone(),
            expected: d.truth.expected.decision.clone().unwrap_or_default(),
            expected_rules: d.truth.expected.failing_rules.clone(),
            got,
            rules: failing_rules(decision).into_iter().collect(),
            seconds,
            results: describe_results(decision),
        });
    }
    let elapsed = started.elapsed();
    println!("{}", render(&outcomes, elapsed, &scope));

    let right = outcomes.iter().filter(|o| o.right()).count();
    let share = right as f64 / outcomes.len().max(1) as f64;
    let wrongly_blocked: Vec<&str> = outcomes
        .iter()
        .filter(|o| o.wrongly_blocked())
        .map(|o| o.variant.as_str())
        .collect();
    let wrongly_ready: Vec<&str> = outcomes
        .iter()
        .filter(|o| o.wrongly_ready())
        .map(|o| o.variant.as_str())
        .collect();
    if report_only() {
        println!("IRONCLAD_HARD_REPORT_ONLY=1: targets not asserted");
        return Ok(());
    }
    ensure!(failures.is_empty(), "{}", failures.join("\n"));
    ensure!(
        wrongly_blocked.is_empty(),
        "wrongly BLOCKED: {wrongly_blocked:?} (IRONCLAD_HARD_REPORT_ONLY=1 to report only)"
    );
    ensure!(
        wrongly_ready.is_empty(),
        "wrongly READY: {wrongly_ready:?} (IRONCLAD_HARD_REPORT_ONLY=1 to report only)"
    );
    ensure!(
        share >= MIN_OUTCOMES_RIGHT,
        "outcomes right {right}/{} = {:.1} % < {:.1} %",
        outcomes.len(),
        100.0 * share,
        100.0 * MIN_OUTCOMES_RIGHT
    );
    Ok(())
}
