//! The shipped trade workflow (`workflows/trade.yaml`) on the sample dossiers
//! (`samples/dossiers`, described in its README): every page is classified, the packet is
//! split into its four documents, and every field has the value the README states.
//!
//! Pages are built from `pdftotext -bbox-layout` (the test may do I/O; the crate may not),
//! twice: once in the PDF's block order, as a text-layer reader gives it, and once in visual
//! line order, as a layout-aware reader would. The workflow must read both the same way.

use std::path::{Path, PathBuf};
use std::process::Command;

use ironclad_core::page::{BBox, PageText, ReadMethod, Word};
use ironclad_extract::{analyze, Analysis, Fact, Workflow};
use serde_json::{json, Value};

const TRADE: &str = include_str!("../../../../workflows/trade.yaml");

fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/dossiers")
}

#[derive(Clone, Copy, Debug)]
enum Order {
    /// `<line>` elements as pdftotext emits them, block by block.
    Blocks,
    /// Words regrouped into visual lines (same baseline), left to right.
    Visual,
}

fn unescape(s: &str) -> String {
    s.replace("&apos;", "'")
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

fn attr(tag: &str, name: &str) -> f32 {
    let key = format!("{name}=\"");
    tag.find(&key)
        .and_then(|at| tag[at + key.len()..].split('"').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

/// Pages from `pdftotext -bbox-layout`, with boxes normalised to the page size.
fn pages(pdf: &Path, order: Order) -> Option<Vec<PageText>> {
    let out = Command::new("pdftotext")
        .arg("-bbox-layout")
        .arg(pdf)
        .arg("-")
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let html = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut result = Vec::new();
    for (index, page) in html.split("<page ").skip(1).enumerate() {
        let (w, h) = (attr(page, "width"), attr(page, "height"));
        let mut words = Vec::new();
        for (line_no, line) in page.split("<line ").skip(1).enumerate() {
            for word in line.split("<word ").skip(1) {
                let Some((tag, rest)) = word.split_once('>') else {
                    continue;
                };
                let text = unescape(rest.split("</word>").next().unwrap_or(""));
                let bbox = BBox {
                    x0: attr(tag, "xMin") / w,
                    y0: attr(tag, "yMin") / h,
                    x1: attr(tag, "xMax") / w,
                    y1: attr(tag, "yMax") / h,
                };
                words.push(Word {
                    text,
                    bbox,
                    confidence: 1.0,
                    line: line_no as u32,
                });
            }
        }
        if let Order::Visual = order {
            words = visual_lines(words);
        }
        result.push(PageText {
            line_blocks: Vec::new(),
            index: index as u32,
            method: ReadMethod::TextLayer,
            confidence: 1.0,
            rotation: 0,
            size_pt: None,
            words,
        });
    }
    Some(result)
}

/// Regroups words into lines by vertical centre (within half a word's height), each line
/// read left to right, lines top to bottom.
fn visual_lines(mut words: Vec<Word>) -> Vec<Word> {
    let centre = |w: &Word| (w.bbox.y0 + w.bbox.y1) / 2.0;
    words.sort_by(|a, b| centre(a).total_cmp(&centre(b)));
    let mut lines: Vec<Vec<Word>> = Vec::new();
    for w in words {
        match lines.last_mut() {
            Some(line) if (centre(&w) - centre(&line[0])).abs() < (w.bbox.y1 - w.bbox.y0) / 2.0 => {
                line.push(w)
            }
            _ => lines.push(vec![w]),
        }
    }
    let mut out = Vec::new();
    for (n, mut line) in lines.into_iter().enumerate() {
        line.sort_by(|a, b| a.bbox.x0.total_cmp(&b.bbox.x0));
        out.extend(line.into_iter().map(|w| Word {
            line: n as u32,
            ..w
        }));
    }
    out
}

fn workflow() -> Workflow {
    Workflow::from_yaml(TRADE).expect("workflows/trade.yaml is valid")
}

fn analyse(file: &str, order: Order) -> Option<Analysis> {
    let pdf = samples().join(file);
    let pages = pages(&pdf, order);
    if pages.is_none() {
        eprintln!(
            "pdftotext unavailable or {} unreadable; skipping",
            pdf.display()
        );
    }
    pages.map(|p| analyze(&workflow(), &p))
}

fn segments(a: &Analysis) -> Vec<(Option<&str>, Vec<u32>)> {
    a.segments
        .iter()
        .map(|s| (s.segment.doc_type.as_deref(), s.segment.pages.clone()))
        .collect()
}

fn fact<'a>(a: &'a Analysis, segment: usize, field: &str) -> &'a Fact {
    a.segments[segment]
        .facts
        .iter()
        .find(|f| f.field == field)
        .unwrap_or_else(|| panic!("no fact {field}"))
}

/// The chosen value as JSON, with weights reduced to kilograms (the unit as written varies).
fn chosen(a: &Analysis, segment: usize, field: &str) -> Value {
    let f = fact(a, segment, field);
    let c = f
        .chosen
        .as_ref()
        .unwrap_or_else(|| panic!("{field}: nothing chosen; {f:#?}"));
    let v = serde_json::to_value(&c.value).unwrap();
    if v["kind"] == "weight" {
        json!({"kg": v["value"]["kg"]})
    } else {
        v
    }
}

fn text(s: &str) -> Value {
    json!({"kind": "text", "value": s})
}

fn money(amount: &str, currency: &str) -> Value {
    json!({"kind": "money", "value": {"amount": amount, "currency": currency}})
}

fn container(code: &str) -> Value {
    json!({"kind": "container_number", "value": {"code": code, "check_digit_valid": true}})
}

fn int(n: i64) -> Value {
    json!({"kind": "integer", "value": n})
}

fn date(d: &str) -> Value {
    json!({"kind": "date", "value": d})
}

fn kg(k: &str) -> Value {
    json!({"kg": k})
}

/// No fact of the analysis is in conflict or missing while required.
fn assert_clean(a: &Analysis) {
    for s in &a.segments {
        for f in &s.facts {
            assert!(
                !f.conflict,
                "{:?} {}: conflict {:#?}",
                s.segment.doc_type, f.field, f.candidates
            );
            assert!(
                !f.missing_required,
                "{:?} {}: missing",
                s.segment.doc_type, f.field
            );
        }
    }
}

const ORDERS: [Order; 2] = [Order::Blocks, Order::Visual];

#[test]
fn text_pdfs_bill_of_lading() {
    for order in ORDERS {
        let Some(a) = analyse("01-text-pdfs/bill-of-lading.pdf", order) else {
            return;
        };
        assert_eq!(
            segments(&a),
            [(Some("bill_of_lading"), vec![0])],
            "{order:?}"
        );
        assert_eq!(a.pages[0].confidence, 1.0);
        assert_eq!(
            chosen(&a, 0, "bl_number"),
            text("MEDUNB447182"),
            "{order:?}"
        );
        assert_eq!(chosen(&a, 0, "container_number"), container("MSCU1234566"));
        assert_eq!(chosen(&a, 0, "package_count"), int(842));
        assert_eq!(chosen(&a, 0, "gross_weight"), kg("12431.30"));
        assert_eq!(chosen(&a, 0, "invoice_number"), text("NHT-24-0317"));
        assert_eq!(chosen(&a, 0, "bl_date"), date("2024-03-14"), "{order:?}");
        assert_clean(&a);
    }
}

#[test]
fn text_pdfs_commercial_invoice_spans_two_pages() {
    for order in ORDERS {
        let Some(a) = analyse("01-text-pdfs/commercial-invoice.pdf", order) else {
            return;
        };
        assert_eq!(
            segments(&a),
            [(Some("commercial_invoice"), vec![0, 1])],
            "{order:?}"
        );
        assert!(a.pages[0].first_page && !a.pages[1].first_page);
        assert_eq!(chosen(&a, 0, "invoice_number"), text("NHT-24-0317"));
        assert_eq!(
            chosen(&a, 0, "invoice_total"),
            money("160727.20", "USD"),
            "{order:?}"
        );
        assert_eq!(chosen(&a, 0, "invoice_date"), date("2024-03-12"));
        assert_eq!(chosen(&a, 0, "bl_number"), text("MEDUNB447182"));
        assert_eq!(chosen(&a, 0, "container_number"), container("MSCU1234566"));
        assert_eq!(chosen(&a, 0, "package_count"), int(842));
        assert_eq!(chosen(&a, 0, "gross_weight"), kg("12431.30"));
        // The invoice number is printed on both pages: two candidates, one value.
        let pages: Vec<u32> = fact(&a, 0, "invoice_number")
            .candidates
            .iter()
            .map(|c| c.page)
            .collect();
        assert!(pages.contains(&0) && pages.contains(&1), "{pages:?}");
        assert_eq!(
            fact(&a, 0, "invoice_total").chosen.as_ref().unwrap().page,
            1
        );
        assert_clean(&a);
    }
}

#[test]
fn text_pdfs_packing_list() {
    for order in ORDERS {
        let Some(a) = analyse("01-text-pdfs/packing-list.pdf", order) else {
            return;
        };
        assert_eq!(segments(&a), [(Some("packing_list"), vec![0])], "{order:?}");
        assert_eq!(chosen(&a, 0, "packing_list_number"), text("PL-NHT-24-0317"));
        assert_eq!(chosen(&a, 0, "invoice_number"), text("NHT-24-0317"));
        assert_eq!(chosen(&a, 0, "bl_number"), text("MEDUNB447182"));
        assert_eq!(chosen(&a, 0, "container_number"), container("MSCU1234566"));
        assert_eq!(chosen(&a, 0, "package_count"), int(842));
        assert_eq!(chosen(&a, 0, "gross_weight"), kg("12431.30"));
        assert_clean(&a);
    }
}

#[test]
fn packet_is_split_into_four_documents_with_their_facts() {
    for order in ORDERS {
        let Some(a) = analyse("03-packet/shipment-packet.pdf", order) else {
            return;
        };
        assert_eq!(
            segments(&a),
            [
                (Some("bill_of_lading"), vec![0]),
                (Some("commercial_invoice"), vec![1, 2]),
                (Some("packing_list"), vec![3]),
                (Some("customs_declaration"), vec![4]),
            ],
            "{order:?}: {:#?}",
            a.pages
        );
        // Bill of lading.
        assert_eq!(chosen(&a, 0, "bl_number"), text("CMDUSGN0924571"));
        assert_eq!(chosen(&a, 0, "container_number"), container("CMAU5128745"));
        assert_eq!(chosen(&a, 0, "package_count"), int(312));
        assert_eq!(chosen(&a, 0, "gross_weight"), kg("7774.40"));
        assert_eq!(chosen(&a, 0, "bl_date"), date("2024-05-09"));
        // Commercial invoice.
        assert_eq!(chosen(&a, 1, "invoice_number"), text("SOF/2024/0571"));
        assert_eq!(chosen(&a, 1, "invoice_total"), money("39904.00", "USD"));
        assert_eq!(chosen(&a, 1, "invoice_date"), date("2024-05-06"));
        // Packing list.
        assert_eq!(chosen(&a, 2, "invoice_number"), text("SOF/2024/0571"));
        assert_eq!(chosen(&a, 2, "package_count"), int(312));
        assert_eq!(chosen(&a, 2, "gross_weight"), kg("7774.40"));
        // Bilingual customs declaration with EU number format.
        assert_eq!(chosen(&a, 3, "declaration_number"), text("24FR07600018457"));
        assert_eq!(
            chosen(&a, 3, "declared_value"),
            money("39004.00", "USD"),
            "{order:?}"
        );
        assert_eq!(chosen(&a, 3, "acceptance_date"), date("2024-06-12"));
        assert_eq!(chosen(&a, 3, "gross_weight"), kg("7774.40"));
        assert_eq!(chosen(&a, 3, "package_count"), int(312));
        assert_eq!(chosen(&a, 3, "invoice_number"), text("SOF/2024/0571"));
        assert_eq!(chosen(&a, 3, "bl_number"), text("CMDUSGN0924571"));
        assert_eq!(chosen(&a, 3, "container_number"), container("CMAU5128745"));
        assert_clean(&a);
    }
}

/// The evidence box is the value's words, not its line.
#[test]
fn value_boxes_are_narrower_than_their_lines() {
    let Some(a) = analyse("03-packet/shipment-packet.pdf", Order::Visual) else {
        return;
    };
    let c = fact(&a, 3, "declared_value").chosen.clone().unwrap();
    assert_eq!(c.raw, "39.004,00 USD");
    assert_eq!(c.page, 4);
    // The label "Valeur déclarée / Declared value:" sits left of the value on the same line.
    assert!(c.bbox.x0 > 0.2, "{:?}", c.bbox);
    assert!(c.bbox.x1 - c.bbox.x0 < 0.2, "{:?}", c.bbox);
    assert!(c.bbox.y1 > c.bbox.y0);
}

/// The whole analysis is what the worker stores: it round-trips through JSON.
#[test]
fn the_analysis_serialises() {
    let Some(a) = analyse("01-text-pdfs/commercial-invoice.pdf", Order::Blocks) else {
        return;
    };
    let json = serde_json::to_string(&a).unwrap();
    let back: Analysis = serde_json::from_str(&json).unwrap();
    assert_eq!(serde_json::to_string(&back).unwrap(), json);
}

#[test]
#[ignore = "prints the packet's analysis for a person to read"]
fn dump_packet() {
    let a = analyse("03-packet/shipment-packet.pdf", Order::Blocks).unwrap();
    for p in &a.pages {
        eprintln!(
            "page {} {:?} conf {} first {} scores {:?} reason {:?}",
            p.page, p.doc_type, p.confidence, p.first_page, p.scores, p.reason
        );
    }
    for s in &a.segments {
        for f in &s.facts {
            let c = f.chosen.as_ref();
            eprintln!(
                "{:?} {} = {:?} ({} candidates, conf {:?}) conflict={}",
                s.segment.doc_type,
                f.field,
                c.map(|c| &c.raw),
                f.candidates.len(),
                c.map(|c| c.confidence),
                f.conflict
            );
        }
    }
}

/// Pages from `tesseract IMAGE - tsv`: one `PageText` per page, words with OCR confidence.
fn ocr_pages(image: &Path) -> Option<Vec<PageText>> {
    let out = Command::new("tesseract")
        .arg(image)
        .arg("-")
        .arg("-l")
        .arg("eng")
        .arg("tsv")
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let tsv = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut pages: Vec<PageText> = Vec::new();
    let mut size = (1.0f32, 1.0f32);
    let mut line_key = None;
    let mut line_no = 0u32;
    for row in tsv.lines().skip(1) {
        let cols: Vec<&str> = row.split('\t').collect();
        if cols.len() < 12 {
            continue;
        }
        let num = |i: usize| cols[i].parse::<f32>().unwrap_or(0.0);
        match cols[0] {
            "1" => {
                size = (num(8).max(1.0), num(9).max(1.0));
                let index = pages.len() as u32;
                pages.push(PageText {
                    line_blocks: Vec::new(),
                    index,
                    method: ReadMethod::Ocr,
                    confidence: 0.0,
                    rotation: 0,
                    size_pt: None,
                    words: vec![],
                });
                line_key = None;
                line_no = 0;
            }
            "5" if !cols[11].trim().is_empty() => {
                let key = (cols[2], cols[3], cols[4]);
                if line_key.is_some_and(|k| k != key) {
                    line_no += 1;
                }
                line_key = Some(key);
                let (x, y, w, h) = (num(6), num(7), num(8), num(9));
                let word = Word {
                    text: cols[11].to_owned(),
                    bbox: BBox {
                        x0: x / size.0,
                        y0: y / size.1,
                        x1: (x + w) / size.0,
                        y1: (y + h) / size.1,
                    },
                    confidence: (num(10) / 100.0).clamp(0.0, 1.0),
                    line: line_no,
                };
                pages.last_mut()?.words.push(word);
            }
            _ => {}
        }
    }
    for p in &mut pages {
        p.confidence =
            p.words.iter().map(|w| w.confidence).sum::<f32>() / p.words.len().max(1) as f32;
    }
    Some(pages)
}

/// The scanned dossier through Tesseract: OCR text is noisier (the README expects review
/// for low confidence), but every document is recognised and its key facts read.
#[test]
fn scans_through_tesseract() {
    let dir = samples().join("02-scans");
    let read = |file: &str| -> Option<Analysis> {
        let pages = ocr_pages(&dir.join(file));
        if pages.is_none() {
            eprintln!("tesseract unavailable; skipping {file}");
        }
        pages.map(|p| analyze(&workflow(), &p))
    };
    let Some(bl) = read("bill-of-lading.jpg") else {
        return;
    };
    assert_eq!(segments(&bl), [(Some("bill_of_lading"), vec![0])]);
    assert_eq!(chosen(&bl, 0, "bl_number"), text("HLCUBSN2403118"));
    assert_eq!(chosen(&bl, 0, "container_number"), container("HLXU8072159"));
    assert_eq!(chosen(&bl, 0, "package_count"), int(64));
    assert_eq!(chosen(&bl, 0, "gross_weight"), kg("26070.00"));
    let c = fact(&bl, 0, "bl_number").chosen.clone().unwrap();
    assert!(
        c.confidence < 1.0 && c.confidence > 0.5,
        "OCR confidence carries into the fact: {}",
        c.confidence
    );

    let Some(inv) = read("commercial-invoice.png") else {
        return;
    };
    assert_eq!(segments(&inv), [(Some("commercial_invoice"), vec![0])]);
    assert_eq!(chosen(&inv, 0, "invoice_number"), text("DPI-2404-118"));
    assert_eq!(chosen(&inv, 0, "invoice_total"), money("209896.00", "EUR"));

    let Some(cd) = read("customs-declaration.tiff") else {
        return;
    };
    assert_eq!(
        segments(&cd),
        [(Some("customs_declaration"), vec![0, 1])],
        "{:#?}",
        cd.pages
    );
    assert_eq!(chosen(&cd, 0, "declared_value"), money("209896.00", "EUR"));
    assert_eq!(chosen(&cd, 0, "container_number"), container("HLXU8072159"));
    assert_eq!(chosen(&cd, 0, "gross_weight"), kg("26070.00"));
    assert_eq!(chosen(&cd, 0, "acceptance_date"), date("2024-04-18"));
}

/// The example in `workflows/README.md` is a valid workflow, so the documentation cannot
/// drift from the format.
#[test]
fn the_readme_example_loads() {
    let readme = include_str!("../../../../workflows/README.md");
    let start = readme.find("```yaml\n").expect("a yaml block") + "```yaml\n".len();
    let end = start + readme[start..].find("```").expect("closed block");
    let wf = Workflow::from_yaml(&readme[start..end]).unwrap_or_else(|e| panic!("{e}"));
    let t = wf.document_type("commercial_invoice").unwrap();
    assert_eq!(t.fields.len(), 4);
    assert_eq!(t.fields[2].unit.as_deref(), Some("kg"));
    assert_eq!(
        t.fields[3].shape.as_ref().map(|s| s.sources()),
        Some(&["##@@&&&&&&&&&&&&&#".to_owned()][..])
    );
}
