//! `ironclad extract`, the real binary: several files read at once, reported in the order
//! given, each failure named with its file and the others still read.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// `ironclad extract --json FILE`: its one report, the run having succeeded.
fn extract_one(file: &Path) -> Value {
    extract_with(file, &[])
}

/// [`extract_one`] with more options for `ironclad extract`.
fn extract_with(file: &Path, options: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_ironclad"))
        .args(["extract", "--json"])
        .args(options)
        .arg(file)
        .output()
        .expect("ironclad runs");
    assert!(
        out.status.success(),
        "{}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

#[test]
fn extract_reports_every_file_in_order_and_names_the_failures() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/generated");
    let files = [
        fixtures.join("set-01/commercial-invoice.scan.pdf"),
        fixtures.join("set-02/does-not-exist.pdf"),
        fixtures.join("set-02/packing-list.pdf"),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"),
        fixtures.join("set-02/bill-of-lading.pdf"),
    ];
    let out = Command::new(env!("CARGO_BIN_EXE_ironclad"))
        .arg("extract")
        .arg("--json")
        .args(&files)
        .output()
        .expect("ironclad runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a failed file makes exit 2\n{stderr}"
    );
    let reported: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    let names: Vec<&str> = reported
        .iter()
        .map(|r| r["file"].as_str().unwrap_or(""))
        .collect();
    let expected: Vec<String> = [&files[0], &files[2], &files[4]]
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(names, expected, "readable files, in the order given");
    let doc_type = |r: &Value| r["analysis"]["segments"][0]["segment"]["doc_type"].clone();
    assert_eq!(doc_type(&reported[0]), "commercial_invoice");
    assert_eq!(reported[0]["pages"][0]["method"], "ocr");
    assert_eq!(doc_type(&reported[1]), "packing_list");
    assert_eq!(reported[1]["pages"][0]["method"], "text_layer");
    assert_eq!(doc_type(&reported[2]), "bill_of_lading");
    assert!(
        stderr.contains("does-not-exist.pdf: cannot read it"),
        "{stderr}"
    );
    assert!(
        stderr.contains("README.md: not a PDF, PNG, JPEG or TIFF"),
        "{stderr}"
    );
}

#[test]
fn extract_reads_a_pipe() {
    // /dev/stdin can be read once only: poppler must get the bytes, not the path.
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/generated/set-02/packing-list.pdf");
    let out = Command::new(env!("CARGO_BIN_EXE_ironclad"))
        .args(["extract", "--json", "/dev/stdin"])
        .stdin(std::fs::File::open(&file).expect("fixture"))
        .output()
        .expect("ironclad runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        report["analysis"]["segments"][0]["segment"]["doc_type"],
        "packing_list"
    );
}

/// Leptonica's refusals inside Tesseract (`Error in pixScanForForeground: invalid box`) are a
/// page's diagnostics, not the user's concern: off the terminal by default, in the log at debug
/// level (target `leptonica`) when asked for.
#[test]
fn leptonica_messages_go_to_the_debug_log_not_the_terminal() {
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pages/speckled.png");
    let run = |log: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_ironclad"))
            .args(["extract", "--json"])
            .arg(&page)
            .env("RUST_LOG", log)
            .output()
            .expect("ironclad runs");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "the page still reads\n{stderr}");
        stderr
    };
    let quiet = run("warn");
    assert!(
        !quiet.contains("Error in"),
        "Leptonica reached the terminal:\n{quiet}"
    );
    let logged = run("warn,leptonica=debug");
    assert!(
        logged.contains("pixScanForForeground") && logged.contains("leptonica"),
        "the message is in the debug log:\n{logged}"
    );
}

/// A title with a stray mark after it (`BILL OF LADING —`, a rule read as `|`) still counts
/// as the title: the page gets the full score, as its clean scan does. Read with the marks
/// kept (`--rule-lines keep`), so the classifier meets them.
#[test]
fn a_title_with_stray_marks_still_counts() {
    let pages = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pages");
    for (file, doc_type, stray) in [
        ("title-dash-bill-of-lading.png", "bill_of_lading", "—"),
        ("title-dash-packing-list.png", "packing_list", "—"),
        (
            "title-rule-commercial-invoice.png",
            "commercial_invoice",
            "|",
        ),
    ] {
        let report = extract_with(&pages.join(file), &["--rule-lines", "keep"]);
        let words = report["pages"][0]["words"].as_array().expect("words");
        assert!(
            words.iter().any(|w| w["text"] == stray),
            "{file}: OCR no longer reads the stray {stray:?}, so this page tests nothing"
        );
        let page = &report["analysis"]["pages"][0];
        assert_eq!(page["doc_type"], doc_type, "{file}: {page}");
        assert_eq!(page["confidence"], 1.0, "{file}: title not counted: {page}");
        assert_eq!(page["first_page"], true, "{file}: {page}");
    }
}

/// What Tesseract reads from table borders (`|` between a label cell and its value cell) is
/// taken out by default, and nothing else is: the same scan read with the marks kept has
/// them, and gives the same fields.
#[test]
fn borders_read_as_text_are_taken_out_and_nothing_else() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/generated/forms/bordered-customs-declaration.low-contrast.scan.pdf");
    let kept = extract_with(&file, &["--rule-lines", "keep"]);
    let dropped = extract_one(&file);
    let words = |report: &Value| -> Vec<String> {
        report["pages"]
            .as_array()
            .expect("pages")
            .iter()
            .flat_map(|p| p["words"].as_array().expect("words").iter())
            .filter_map(|w| w["text"].as_str().map(str::to_owned))
            .collect()
    };
    let (kept_words, dropped_words) = (words(&kept), words(&dropped));
    let bars = |words: &[String]| words.iter().filter(|w| *w == "|").count();
    assert!(
        bars(&kept_words) >= 3,
        "OCR no longer reads the borders as `|`, so this scan tests nothing: {kept_words:?}"
    );
    assert_eq!(bars(&dropped_words), 0, "{dropped_words:?}");
    // Only the bars went: every other word is read the same, in the same order.
    let without_bars: Vec<&String> = kept_words.iter().filter(|w| *w != "|").collect();
    assert_eq!(without_bars, dropped_words.iter().collect::<Vec<_>>());
    let chosen = |report: &Value| -> Vec<Value> {
        report["analysis"]["segments"]
            .as_array()
            .expect("segments")
            .iter()
            .flat_map(|s| s["facts"].as_array().expect("facts").iter())
            .map(|f| f["chosen"]["raw"].clone())
            .collect()
    };
    assert_eq!(chosen(&kept), chosen(&dropped));
}

/// On an invoice from elsewhere, small type on a coarse image with rules under its lines
/// (Flipkart's, from invoice2data's corpus), taking rule marks out loses no word: the faint
/// 4-pixel hyphen of `India - 560067`, boxed by OCR with the rule under it, stays.
#[test]
fn rule_marks_out_lose_no_word_of_an_invoice_from_elsewhere() {
    let Some(corpus) = crate::invoice2data::compare::corpus() else {
        return;
    };
    let file = corpus.join("compare/FlipkartInvoice.png");
    let words = |report: &Value| -> Vec<String> {
        report["pages"][0]["words"]
            .as_array()
            .expect("words")
            .iter()
            .filter_map(|w| w["text"].as_str().map(str::to_owned))
            .collect()
    };
    let kept = words(&extract_with(&file, &["--rule-lines", "keep"]));
    let dropped = words(&extract_one(&file));
    let hyphen = kept
        .windows(2)
        .position(|w| w[0] == "-" && w[1].ends_with("60067"));
    assert!(
        hyphen.is_some(),
        "OCR no longer reads the hyphen before the postcode, so this page tests nothing: {kept:?}"
    );
    assert_eq!(kept, dropped);
}

/// A stacked form (small-capital labels, each value under its label, three columns side by
/// side): reading order pairs no label with its value, so only the labels' geometry can. The
/// value's box lies under its label's, and both are evidence.
#[test]
fn a_stacked_form_gives_each_value_from_under_its_label() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/generated");
    let file = "forms/stacked-boxed-bill-of-lading.pdf";
    let truth: Value = serde_json::from_slice(
        &std::fs::read(fixtures.join("truth.json")).expect("truth.json is readable"),
    )
    .expect("truth.json is JSON");
    let entry = truth["files"]
        .as_array()
        .and_then(|files| files.iter().find(|f| f["file"] == file))
        .expect("the stacked B/L is in the truth");
    let printed = &entry["documents"][0]["printed"];
    let report = extract_one(&fixtures.join(file));
    let facts = report["analysis"]["segments"][0]["facts"]
        .as_array()
        .expect("facts")
        .clone();
    for (field, truth_field) in [
        ("gross_weight", "gross_weight_kg"),
        ("container_number", "container_number"),
        ("package_count", "package_count"),
    ] {
        let fact = facts
            .iter()
            .find(|f| f["field"] == field)
            .unwrap_or_else(|| panic!("{field} is extracted"));
        let chosen = &fact["chosen"];
        // The raw text may go on after the value (`32 PALLETS`): the parser read it whole.
        let (raw, expected) = (chosen["raw"].as_str(), printed[truth_field].as_str());
        assert!(
            raw.zip(expected).is_some_and(|(r, e)| r.starts_with(e)),
            "{field}: {fact}"
        );
        let label = &chosen["label_bbox"];
        assert!(
            label.is_object(),
            "{field} was found by its label: {chosen}"
        );
        let (label_bottom, value_top) = (label["y1"].as_f64(), chosen["bbox"]["y0"].as_f64());
        assert!(
            label_bottom <= value_top,
            "{field}: the value is under its label: {chosen}"
        );
        let overlap = chosen["bbox"]["x0"].as_f64() < label["x1"].as_f64()
            && label["x0"].as_f64() < chosen["bbox"]["x1"].as_f64();
        assert!(overlap, "{field}: and in its column: {chosen}");
        assert_eq!(fact["conflict"], false, "{field}: {fact}");
    }
}

/// Every letter of each occurrence of `phrase` in `bytes` turned into `x`, same length (so the
/// PDF's offsets stay right): a title and keywords damaged beyond reading.
fn deface(bytes: &mut [u8], phrase: &str) -> usize {
    let needle = phrase.as_bytes();
    let mut found = 0;
    let mut i = 0;
    while i + needle.len() <= bytes.len() {
        if &bytes[i..i + needle.len()] == needle {
            for b in &mut bytes[i..i + needle.len()] {
                if b.is_ascii_alphabetic() {
                    *b = b'x';
                }
            }
            found += 1;
            i += needle.len();
        } else {
            i += 1;
        }
    }
    found
}

#[test]
fn a_bill_of_lading_without_its_title_or_keywords_is_recognized_by_its_labels() {
    let original_path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/generated/set-03/bill-of-lading.pdf");
    let mut bytes = std::fs::read(&original_path).expect("fixture");
    // Every keyword of the bill of lading's recognition, title first.
    for phrase in [
        "BILL OF LADING",
        "Bill of lading",
        "NOTIFY PARTY",
        "PORT OF LOADING",
        "Port of loading",
        "PORT OF DISCHARGE",
        "Port of discharge",
        "PLACE OF DELIVERY",
        "Place of delivery",
        "SHIPPED ON BOARD",
        "SHIPPER",
    ] {
        assert!(
            deface(&mut bytes, phrase) > 0,
            "{phrase} is not in the fixture"
        );
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let damaged_path = dir.path().join("bill-of-lading-defaced.pdf");
    std::fs::write(&damaged_path, &bytes).expect("written");

    let original = extract_one(&original_path);
    let damaged = extract_one(&damaged_path);
    let page = &damaged["analysis"]["pages"][0];
    assert_eq!(page["doc_type"], "bill_of_lading", "{page:#}");
    let by_labels: Vec<&str> = page["by_labels"]
        .as_array()
        .unwrap_or_else(|| panic!("recognized by labels: {page:#}"))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for field in ["bl_number", "container_number", "bl_date"] {
        assert!(by_labels.contains(&field), "{field} not in {by_labels:?}");
    }
    assert!(
        original["analysis"]["pages"][0].get("by_labels").is_none(),
        "the intact page is recognized by its keywords"
    );
    // The page being recognized, its fields are read as from the intact page.
    let values = |r: &Value| -> Vec<(String, Value)> {
        r["analysis"]["segments"][0]["facts"]
            .as_array()
            .expect("facts")
            .iter()
            .map(|f| {
                (
                    f["field"].as_str().unwrap_or("").to_owned(),
                    f["chosen"]["value"].clone(),
                )
            })
            .collect()
    };
    let (before, after) = (values(&original), values(&damaged));
    for field in [
        "bl_number",
        "container_number",
        "package_count",
        "gross_weight",
    ] {
        let of = |v: &[(String, Value)]| v.iter().find(|(f, _)| f == field).map(|(_, v)| v.clone());
        assert_eq!(of(&after), of(&before), "{field}");
        assert!(of(&after).is_some_and(|v| !v.is_null()), "{field} was read");
    }
}

/// The chosen value of `field` in the first segment of an `ironclad extract --json` report, and
/// the whole fact.
fn fact_of(report: &Value, field: &str) -> Value {
    report["analysis"]["segments"][0]["facts"]
        .as_array()
        .and_then(|facts| facts.iter().find(|f| f["field"] == field))
        .cloned()
        .unwrap_or_else(|| panic!("{field} is extracted: {report:#}"))
}

/// A stacked row `CNTR NO | BILL OF LADING NO.` over `MSCU6394177 | COSU6384120577`, read from
/// the text layer cell by cell: a pattern whose `\s*` runs across the line break after
/// `BILL OF LADING NO.` meets the container first. The label's geometry reads the value under
/// it, which wins without a conflict; without labels the container is not taken confidently.
#[test]
fn a_pattern_across_a_line_break_does_not_take_the_next_columns_value() {
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pages/stacked-two-columns.pdf");
    let workflow = |labels: &str| {
        format!(
            r#"
name: stacked
version: 1
document_types:
  - id: bill_of_lading
    title: Bill of lading
    recognition:
      keywords: [{{text: bill of lading, title: true, weight: 1}}]
    fields:
      - name: bl_number
        parser: text
        patterns: ['bill of lading no\.?\s*:?\s*(?P<value>[a-z]{{4}}\d{{6,}})']
{labels}"#
        )
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let run = |name: &str, labels: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, workflow(labels)).expect("workflow written");
        let path = path.display().to_string();
        fact_of(&extract_with(&file, &["--workflow", &path]), "bl_number")
    };
    let (container, bl) = ("MSCU6394177", "COSU6384120577");

    let fact = run(
        "labels.yaml",
        "        labels: ['bill of lading no']\n        value_at: [below]\n",
    );
    let chosen = &fact["chosen"];
    assert_eq!(chosen["raw"], bl, "{fact:#}");
    assert!(
        chosen["label_bbox"].is_object(),
        "read under its label: {chosen}"
    );
    assert_eq!(fact["conflict"], false, "{fact:#}");
    let other = fact["candidates"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["raw"] == container))
        .unwrap_or_else(|| panic!("the pattern's reading is kept as evidence: {fact:#}"));
    let (other, chosen) = (other["confidence"].as_f64(), chosen["confidence"].as_f64());
    assert!(
        other.zip(chosen).is_some_and(|(o, c)| o < c - 0.2),
        "{fact:#}"
    );

    let fact = run("patterns-only.yaml", "");
    let chosen = &fact["chosen"];
    let confident = chosen["confidence"].as_f64().is_some_and(|c| c >= 0.6);
    assert!(
        !(chosen["raw"] == container && confident),
        "the other column's value is not taken with full confidence: {fact:#}"
    );
}

/// Page 2 of a customs declaration with no title, no "(continued)" and no "Page 2 of 2", but
/// the declaration's labels (`Declaration No.`, `Invoice No.`), continues the declaration
/// rather than becoming an UNKNOWN page that asks for review; the page says so.
#[test]
fn a_declarations_untitled_second_page_continues_it() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pages/declaration-untitled-page-2.pdf");
    let report = extract_one(&file);
    let pages = &report["analysis"]["pages"];
    assert_eq!(pages[0]["doc_type"], "customs_declaration", "{pages:#}");
    let second = &pages[1];
    assert_eq!(second["doc_type"], "customs_declaration", "{second:#}");
    assert_eq!(second["continues"], 0, "{second:#}");
    assert_eq!(second["first_page"], false, "{second:#}");
    let labels: Vec<&str> = second["by_labels"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert_eq!(
        labels,
        ["declaration_number", "invoice_number"],
        "{second:#}"
    );
    let segments = report["analysis"]["segments"].as_array().expect("segments");
    assert_eq!(segments.len(), 1, "one document: {segments:#?}");
    assert_eq!(segments[0]["segment"]["doc_type"], "customs_declaration");
    assert_eq!(segments[0]["segment"]["pages"], serde_json::json!([0, 1]));
}

/// The README's sample declaration (`samples/dossiers/02-scans`): Tesseract splits the line
/// `Invoice No.: DPI-2404-118` into two columns and the first reading gives `DPI`. The second
/// look reads that row again on its own, gets the number whole, and the cut reading no longer
/// counts: the fact is `DPI-2404-118`, not in conflict, its evidence box on the printed value
/// of the stored page (right of the page's middle, on the invoice-number row). With the second
/// look off, the same binary leaves the cut reading in conflict — so this test fails without
/// it.
#[test]
fn a_value_ocr_split_from_its_row_is_read_whole_by_a_second_look() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("samples/dossiers/02-scans/customs-declaration.tiff");
    let report = extract_one(&file);
    let fact = fact_of(&report, "invoice_number");
    let chosen = &fact["chosen"];
    let key = |v: &Value| -> String {
        v.as_str()
            .unwrap_or("")
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect()
    };
    assert_eq!(key(&chosen["value"]["value"]), "DPI2404118", "{fact}");
    assert_eq!(fact["conflict"], false, "{fact}");
    assert!(
        fact["candidates"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["origin"] == "second_look")),
        "a second-look reading is among the evidence: {fact}"
    );
    let b = &chosen["bbox"];
    let (x0, y0, x1) = (
        b["x0"].as_f64().unwrap_or(-1.0),
        b["y0"].as_f64().unwrap_or(-1.0),
        b["x1"].as_f64().unwrap_or(-1.0),
    );
    // Where the generator prints it: after `Invoice No.:` in the right half, a third of the
    // way down the page.
    assert!(x0 > 0.5 && x1 < 0.75 && (0.3..0.37).contains(&y0), "{b}");
    let summary = &report["second_look"];
    assert!(summary["regions"].as_u64().unwrap_or(0) >= 1, "{summary}");
    assert!(
        summary["facts_changed"].as_u64().unwrap_or(0) >= 1,
        "{summary}"
    );

    let without = extract_with(&file, &["--second-look", "false"]);
    let first = fact_of(&without, "invoice_number");
    assert!(
        key(&first["chosen"]["value"]["value"]) != "DPI2404118" || first["conflict"] == true,
        "the first reading alone was expected to be cut or in conflict with its cut reading \
         (else this test proves nothing): {first}"
    );
    assert_eq!(without["second_look"]["regions"], 0);
}

/// A text-layer PDF costs the second look nothing: no region is read again.
#[test]
fn a_text_layer_file_gets_no_second_look() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/generated/set-02/customs-declaration.pdf");
    let report = extract_one(&file);
    assert_eq!(
        report["second_look"]["regions"], 0,
        "{}",
        report["second_look"]
    );
    assert_eq!(report["second_look"]["pages"], 0);
}
