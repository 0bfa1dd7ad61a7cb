//! PDF: complete, not encrypted, parsed by `lopdf`, and every page of the page tree resolves.

use super::pdf_guard::{self, ObjectStreamScope};
use super::InspectError;
use crate::sniff::pdf_header_offset;
use lopdf::{Document, Object, ObjectId};
use std::collections::{HashMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Budget for `lopdf` 0.38's load, in (objects read × file bytes). Its parser recounts the
/// newlines before every object it reads (`nom_locate` line tracking), so loading costs
/// objects × size: ~10^11 a second in release here, 6·10^10 for a 10,000-page text PDF. The
/// budget only stops pathological files (a 100 MB scan of 2,000 objects is 2·10^11); lopdf
/// 0.47 loads linearly and would make this unnecessary.
pub(super) const LOAD_COST_BUDGET: u64 = 1_000_000_000_000;

/// How close to the end `%%EOF` must be. `lopdf` itself looks in the last 512 bytes but
/// recovers from a lot; an upload that lost its end must be refused, not half-read.
const EOF_WINDOW: usize = 1024;

/// Counts the pages of a PDF, refusing truncated, damaged and encrypted files. A file whose
/// page tree declares more than `max_pages` is refused before the full parse.
pub(super) fn count_pages(bytes: &[u8], max_pages: u32) -> Result<u32, InspectError> {
    let loaded = load_checked(bytes, max_pages, LOAD_COST_BUDGET)?;
    u32::try_from(loaded.pages.len())
        .map_err(|_| InspectError::unreadable("the PDF is corrupt (too many pages)"))
}

/// A PDF parsed by `lopdf` behind every check of [`count_pages`], with its page tree as the
/// checks walked it.
#[derive(Debug)]
pub struct LoadedPdf {
    /// The parsed objects.
    pub document: Document,
    /// Every page in document order, as the tree was walked from the catalog (lopdf's own
    /// `get_pages` skips nodes without `/Type`, which the walk, like poppler, accepts).
    pub pages: Vec<ObjectId>,
    /// Each walked page and inner node's parent in that walk: where inheritable attributes
    /// (`/MediaBox`, `/Resources`, `/Rotate`…) come from, whatever a node's own `/Parent` says.
    pub parents: HashMap<ObjectId, ObjectId>,
}

/// Parses a PDF with `lopdf` behind every check [`count_pages`] makes, refusing it too when
/// parsing would cost more than `max_load_cost` (objects × bytes, ≈10^11 a second).
pub(super) fn load_checked(
    bytes: &[u8],
    max_pages: u32,
    max_load_cost: u64,
) -> Result<LoadedPdf, InspectError> {
    let tail = &bytes[bytes.len().saturating_sub(EOF_WINDOW)..];
    if memchr::memmem::find(tail, b"%%EOF").is_none() {
        return Err(InspectError::unreadable(
            "the PDF is incomplete (no end-of-file marker; it may have been truncated)",
        ));
    }
    // `lopdf` parses from the header on; the checks below must see the same bytes.
    let body = &bytes[pdf_header_offset(bytes).unwrap_or(0)..];
    pdf_guard::check_nesting(body)?;
    let xref = pdf_guard::check_xref_chain(body)?;
    if xref.encrypted {
        return Err(InspectError::Encrypted);
    }
    if let Some(declared) = xref.declared_pages {
        if declared > i64::from(max_pages) {
            return Err(InspectError::TooManyPages {
                pages: u32::try_from(declared).unwrap_or(u32::MAX),
                max: max_pages,
            });
        }
    }
    if xref.entries.saturating_mul(body.len() as u64) > max_load_cost.min(LOAD_COST_BUDGET) {
        return Err(InspectError::too_large(format!(
            "the PDF is too complex to inspect ({} objects in {} MB)",
            xref.entries,
            body.len() >> 20
        )));
    }
    let document = load(body)?;
    // Backstop: the preflight and `lopdf` should agree on the main trailer.
    if document.trailer.has(b"Encrypt") {
        return Err(InspectError::Encrypted);
    }
    let (pages, parents) = walk_page_tree(&document)?;
    // The early refusal above trusts `/Count`, which a damaged or hostile file may omit or
    // understate; the walked tree is what counts.
    if pages.len() > max_pages as usize {
        return Err(InspectError::TooManyPages {
            pages: u32::try_from(pages.len()).unwrap_or(u32::MAX),
            max: max_pages,
        });
    }
    Ok(LoadedPdf {
        document,
        pages,
        parents,
    })
}

/// Parses with `lopdf` under the object-stream guard. A panic inside `lopdf` (it has
/// arithmetic on untrusted numbers) becomes an error instead of taking the caller down.
fn load(body: &[u8]) -> Result<Document, InspectError> {
    let scope = ObjectStreamScope::enter();
    let loaded = catch_unwind(AssertUnwindSafe(|| {
        lopdf::Reader {
            buffer: body,
            document: Document::new(),
            encryption_state: None,
            raw_objects: Default::default(),
        }
        .read(Some(pdf_guard::guard_object_stream))
    }));
    if let Some(rejection) = scope.rejection() {
        return Err(rejection);
    }
    match loaded {
        Ok(Ok(document)) => Ok(document),
        Ok(Err(e)) => Err(InspectError::unreadable(format!(
            "the PDF is corrupt ({e})"
        ))),
        Err(_) => Err(InspectError::unreadable("the PDF is corrupt")),
    }
}

/// The pages of a walked page tree in order, and each walked node's parent.
type WalkedTree = (Vec<ObjectId>, HashMap<ObjectId, ObjectId>);

/// Walks the page tree from the catalog: the pages in order and each node's walked parent.
/// `lopdf` silently skips objects it cannot parse, so every node and every page's content
/// streams must resolve here. Each node is visited once: a loop or a shared node is
/// corruption. The work is linear in the number of objects, which parsing already paid for.
fn walk_page_tree(doc: &Document) -> Result<WalkedTree, InspectError> {
    let corrupt = |what: &str| InspectError::unreadable(format!("the PDF is corrupt ({what})"));
    let root = doc
        .catalog()
        .and_then(|catalog| catalog.get(b"Pages"))
        .and_then(Object::as_reference)
        .map_err(|_| corrupt("no page tree"))?;
    let mut stack = vec![root];
    let mut visited: HashSet<ObjectId> = HashSet::new();
    let mut pages: Vec<ObjectId> = Vec::new();
    let mut parents: HashMap<ObjectId, ObjectId> = HashMap::new();
    while let Some(id) = stack.pop() {
        if !visited.insert(id) {
            return Err(corrupt("the page tree loops"));
        }
        let node = doc.get_dictionary(id).map_err(|_| {
            corrupt(&format!(
                "page object {} {} is missing or damaged",
                id.0, id.1
            ))
        })?;
        let kids = node.get(b"Kids").ok();
        let is_tree_node = match node.get(b"Type").and_then(Object::as_name) {
            Ok(b"Pages") => true,
            Ok(b"Page") => false,
            // Some writers omit /Type; a node with kids is an inner node.
            _ => kids.is_some(),
        };
        if is_tree_node {
            let kids = kids
                .and_then(|k| doc.dereference(k).ok())
                .and_then(|(_, k)| k.as_array().ok())
                .ok_or_else(|| corrupt("a page tree node has no kids"))?;
            for kid in kids.iter().rev() {
                let kid = kid
                    .as_reference()
                    .map_err(|_| corrupt("bad page reference"))?;
                parents.insert(kid, id);
                stack.push(kid);
            }
        } else {
            pages.push(id);
            let page_no = u32::try_from(pages.len()).map_err(|_| corrupt("too many pages"))?;
            check_contents(doc, node.get(b"Contents").ok(), page_no)?;
        }
    }
    if pages.is_empty() {
        return Err(InspectError::unreadable("the PDF has no pages"));
    }
    Ok((pages, parents))
}

/// A page's `/Contents` (a stream, or an array of streams) must resolve.
fn check_contents(
    doc: &Document,
    contents: Option<&Object>,
    page: u32,
) -> Result<(), InspectError> {
    let missing = || {
        InspectError::unreadable(format!(
            "the PDF is corrupt (the content of page {page} is missing or damaged)"
        ))
    };
    let is_stream = |id: ObjectId| doc.get_object(id).is_ok_and(|o| o.as_stream().is_ok());
    match contents {
        // A page without contents is blank, which is allowed.
        None => Ok(()),
        Some(Object::Reference(id)) => match doc.get_object(*id) {
            Ok(Object::Stream(_)) => Ok(()),
            Ok(Object::Array(parts)) => check_parts(parts, &is_stream).ok_or_else(missing),
            _ => Err(missing()),
        },
        Some(Object::Array(parts)) => check_parts(parts, &is_stream).ok_or_else(missing),
        Some(_) => Err(missing()),
    }
}

fn check_parts(parts: &[Object], is_stream: &impl Fn(ObjectId) -> bool) -> Option<()> {
    parts
        .iter()
        .all(|p| p.as_reference().is_ok_and(is_stream))
        .then_some(())
}
