//! invoice2data templates through the pipeline: `ironclad templates load` stores a set in
//! PostgreSQL (refusing a set with a broken template, and not minting a version for the same
//! files twice), and a case submitted through the API gets each value the template reads as a
//! fact, with the page and box of the words it was read from, from a text layer and from OCR.
//!
//! With invoice2data's own corpus beside the repository (see `tests/documents/invoice2data.rs`),
//! its compare invoices go through the pipeline too, and the facts must hold what invoice2data
//! itself extracts.

use super::*;

#[allow(dead_code)] // the corpus's comparison helpers this test does not need
#[path = "../../crates/extract/tests/support/compare.rs"]
mod compare;

fn fixture_templates() -> PathBuf {
    Path::new(ROOT).join("tests/fixtures/templates")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn templates_loaded_into_the_database_give_facts_with_evidence_through_the_pipeline() {
    let _turn = ocr_turn().await;
    let rig = Rig::new().await.expect("rig");
    // Loaded before the server starts; a later load would be picked up by the next case.
    let loaded = load_sets(&rig);
    let mut server = rig.start().expect("starting ironclad all");
    let outcome = match loaded {
        Ok(()) => templates_scenario(&rig, &mut server).await,
        Err(e) => Err(e),
    };
    rig.finish(server, outcome).await;
}

/// The set the scenario reads with: the fixtures' templates, plus invoice2data's library
/// when its corpus is here. A broken set is refused first, and changes nothing.
fn load_sets(rig: &Rig) -> Result<()> {
    let broken = rig.dir.path().join("broken-templates");
    std::fs::create_dir_all(&broken)?;
    std::fs::copy(
        fixture_templates().join("shenzhen-brightway.yml"),
        broken.join("good.yml"),
    )?;
    std::fs::write(
        broken.join("bad.yml"),
        "issuer: X\nkeywords: [a]\nfields:\n  amount: Total (\\d+[\n",
    )?;
    let out = rig
        .command(&["templates", "load", &broken.display().to_string()])
        .output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(
        out.status.code() == Some(2)
            && stderr.contains("bad.yml")
            && stderr.contains("nothing stored"),
        "a set with a broken template must be refused with the file named: {} {stderr}",
        out.status
    );

    let dir = rig.dir.path().join("templates");
    std::fs::create_dir_all(&dir)?;
    for entry in std::fs::read_dir(fixture_templates())? {
        let path = entry?.path();
        if let Some(name) = path.file_name() {
            std::fs::copy(&path, dir.join(name))?;
        }
    }
    if let Some(corpus) = compare::corpus() {
        let library = corpus.join("templates");
        let status = Command::new("cp")
            .arg("-r")
            .arg(&library)
            .arg(dir.join("invoice2data"))
            .status()?;
        ensure!(status.success(), "copying {}", library.display());
    }
    let dir = dir.display().to_string();
    // invoice2data's library holds a template Python cannot compile either (nl.gulf.yml).
    let first = rig.cli(&["templates", "load", "--skip-invalid", &dir])?;
    ensure!(
        first.contains("template set version 1 stored"),
        "the first set is version 1 (the refused one left nothing): {first}"
    );
    let again = rig.cli(&["templates", "load", "--skip-invalid", &dir])?;
    ensure!(
        again.contains("version 1 already stored"),
        "the same files are the same version: {again}"
    );
    Ok(())
}

async fn templates_scenario(rig: &Rig, server: &mut Server) -> Result<()> {
    let api = Api::ready(rig, server).await?;
    let invoices = Path::new(ROOT).join("tests/fixtures/generated/set-01");
    let mut cases = Vec::new();
    for file in ["commercial-invoice.pdf", "commercial-invoice.scan.pdf"] {
        let id = submit_file(&api, &invoices.join(file), &format!("templates-{file}")).await?;
        cases.push((file, id));
    }
    let corpus = compare::corpus();
    let mut compare_cases = Vec::new();
    match &corpus {
        Some(corpus) => {
            for case in compare::PASSING_THROUGH_THE_PRODUCT {
                let pdf = corpus.join("compare").join(format!("{case}.pdf"));
                compare_cases.push((case, submit_file(&api, &pdf, case).await?));
            }
        }
        None => println!("invoice2data corpus not found: its compare cases are not submitted"),
    }

    let mut problems = Vec::new();
    for (file, id) in &cases {
        let case = api.settled(id).await?;
        for p in check_fixture_invoice(&case) {
            problems.push(format!("{file} (case {id}): {p}"));
        }
    }
    if let Some(corpus) = &corpus {
        for (name, id) in &compare_cases {
            let case = api.settled(id).await?;
            let expected: Value = serde_json::from_str(&std::fs::read_to_string(
                corpus.join("compare").join(format!("{name}.json")),
            )?)?;
            let expected = expected.get(0).cloned().unwrap_or(expected);
            for p in check_compare_case(&expected, &case) {
                problems.push(format!("{name} (case {id}): {p}"));
            }
        }
    }
    ensure!(problems.is_empty(), "{}", problems.join("\n"));
    println!(
        "templates through the pipeline: 2 fixture invoices, {} invoice2data compare cases",
        compare_cases.len()
    );
    Ok(())
}

/// `POST /v1/cases` with one file.
async fn submit_file(api: &Api, file: &Path, reference: &str) -> Result<String> {
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let form = reqwest::multipart::Form::new()
        .text("workflow", "trade")
        .text("external_reference", reference.to_owned())
        .part(
            "file",
            reqwest::multipart::Part::bytes(bytes).file_name(name),
        );
    let response = api
        .http
        .post(format!("{}/v1/cases", api.base))
        .bearer_auth(&api.key)
        .header("Idempotency-Key", format!("templates-{reference}"))
        .multipart(form)
        .send()
        .await?;
    let status = response.status();
    let body: Value = response.json().await?;
    ensure!(status.as_u16() == 201, "intake answered {status}: {body}");
    body["case_id"]
        .as_str()
        .map(str::to_owned)
        .context("no case_id in the 201")
}

/// Every fact of the case by field (the last segment holding it).
fn facts(case: &Value) -> BTreeMap<String, Value> {
    case["segments"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["facts"].as_array().into_iter().flatten())
        .filter_map(|f| Some((f["field"].as_str()?.to_owned(), f.clone())))
        .collect()
}

/// A fact's box as `[x0, y0, x1, y1]`.
fn bbox(fact: &Value) -> Option<[f64; 4]> {
    let b = &fact["bbox"];
    Some([
        b["x0"].as_f64()?,
        b["y0"].as_f64()?,
        b["x1"].as_f64()?,
        b["y1"].as_f64()?,
    ])
}

/// The generated Shenzhen Brightway invoice (`set-01`): the template's own fields are facts
/// with their words' boxes, and the field the workflow declares too has the template's
/// reading as an agreeing candidate.
fn check_fixture_invoice(case: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let facts = facts(case);
    let value = |field: &str| facts.get(field).map(|f| f["value"]["value"].clone());
    let expect = [
        ("customer_po", serde_json::json!("PO-976103")),
        ("amount", serde_json::json!("20392.3")),
        ("date", serde_json::json!("2024-08-17")),
        (
            "issuer",
            serde_json::json!("Shenzhen Brightway Electronics"),
        ),
        ("invoice_number", serde_json::json!("SBE/2024/8900")),
    ];
    for (field, want) in &expect {
        match value(field) {
            Some(got) if &got == want => {}
            got => problems.push(format!("{field}: expected {want}, got {got:?}")),
        }
    }
    if facts.contains_key("incoterm_place") {
        problems.push("a static value, printed nowhere, became a fact".into());
    }
    // Evidence: on the first page, in the invoice-details column on the right, one row under
    // the invoice date, which is one row under the invoice number.
    let boxes: Vec<Option<[f64; 4]>> = ["invoice_number", "invoice_date", "customer_po"]
        .iter()
        .map(|f| facts.get(*f).and_then(bbox))
        .collect();
    match boxes.as_slice() {
        [Some(number), Some(date), Some(po)] => {
            if !(po[0] > 0.5 && number[1] < date[1] && date[1] < po[1] && po[1] - date[1] < 0.03) {
                problems.push(format!(
                    "customer_po's box {po:?} is not one row under the invoice date {date:?}"
                ));
            }
        }
        other => problems.push(format!("missing boxes: {other:?}")),
    }
    if facts.get("customer_po").and_then(|f| f["page"].as_i64()) != Some(0) {
        problems.push("customer_po is not on page 0".into());
    }
    match facts.get("invoice_number") {
        Some(f) => {
            let by_template = f["candidates"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["template"] == "Shenzhen Brightway Electronics");
            if !by_template || f["conflict"] != false {
                problems.push(format!(
                    "invoice_number should hold the template's agreeing candidate: {f}"
                ));
            }
        }
        None => problems.push("no invoice_number".into()),
    }
    problems
}

/// An invoice2data compare case: `invoice_number`, `amount` and `date` as invoice2data gives
/// them, each with a box on a page.
fn check_compare_case(expected: &Value, case: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let facts = facts(case);
    for field in ["invoice_number", "amount", "date"] {
        let Some(want) = expected.get(field) else {
            continue;
        };
        let Some(fact) = facts.get(field) else {
            problems.push(format!("no {field} fact (expected {want})"));
            continue;
        };
        let got = &fact["value"]["value"];
        let same = match (
            want.as_f64(),
            got.as_str().and_then(|s| s.parse::<f64>().ok()),
        ) {
            (Some(w), Some(g)) => (w - g).abs() < 1e-6,
            _ => {
                want.as_str().is_some_and(|w| {
                    // invoice2data writes dates with a time; ours are dates.
                    got.as_str() == Some(w) || w.starts_with(got.as_str().unwrap_or("\u{0}"))
                }) || got == want
            }
        };
        if !same {
            problems.push(format!("{field}: expected {want}, got {got}"));
        }
        if bbox(fact).is_none() || fact["page"].as_i64().is_none() {
            problems.push(format!("{field} has no evidence: {fact}"));
        }
    }
    problems
}
