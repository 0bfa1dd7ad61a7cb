//! Page results cached by content, so a duplicate upload or a reprocessed document skips OCR.

use ironclad_core::page::PageText;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A store of page results by key. Keys are lowercase hex SHA-256 digests made by
/// [`PageReader`](crate::PageReader); implementations may assume nothing else about them.
///
/// Both methods are best effort: a cache that cannot answer returns `None`, one that cannot
/// store drops the page, and reading carries on either way.
pub trait PageCache: Send + Sync {
    /// The page stored under `key`, if any.
    fn get(&self, key: &str) -> Option<PageText>;
    /// Stores `page` under `key`, replacing any previous value.
    fn put(&self, key: &str, page: &PageText);
}

/// A [`PageCache`] keeping one JSON file per key in a directory.
///
/// Writes go to a temporary file in the same directory and are renamed into place, so a
/// reader never sees half a file and concurrent writers of one key (same content, same
/// result) simply replace each other. Nothing is ever evicted: bound the directory's size
/// from outside (for example by age) if it matters.
#[derive(Debug)]
pub struct DirPageCache {
    dir: PathBuf,
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl DirPageCache {
    /// A cache in `dir`, created (with parents) if missing.
    pub fn new(dir: impl Into<PathBuf>) -> std::io::Result<DirPageCache> {
        let dir = dir.into();
        fs::create_dir_all(&dir)?;
        Ok(DirPageCache { dir })
    }

    /// The directory holding the entries.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file for `key`, or `None` for a key that is not a plain token (a key must never
    /// name a path outside the directory).
    fn path(&self, key: &str) -> Option<PathBuf> {
        let plain = !key.is_empty()
            && key.len() <= 128
            && key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        plain.then(|| self.dir.join(format!("{key}.json")))
    }
}

impl PageCache for DirPageCache {
    fn get(&self, key: &str) -> Option<PageText> {
        let bytes = fs::read(self.path(key)?).ok()?;
        // A damaged entry is a miss; the next put replaces it.
        serde_json::from_slice(&bytes).ok()
    }

    fn put(&self, key: &str, page: &PageText) {
        let Some(path) = self.path(key) else { return };
        let Ok(json) = serde_json::to_vec(page) else {
            return;
        };
        let tmp = self.dir.join(format!(
            ".{key}.{}.{}.tmp",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let written = fs::File::create(&tmp)
            .and_then(|mut f| f.write_all(&json))
            .and_then(|_| fs::rename(&tmp, &path));
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            tracing::warn!(error = %e, dir = %self.dir.display(), "page cache write failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ironclad_core::page::ReadMethod;

    #[test]
    fn round_trip_and_hostile_keys() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DirPageCache::new(dir.path().join("sub")).unwrap();
        let page = PageText {
            line_blocks: Vec::new(),
            index: 3,
            method: ReadMethod::Ocr,
            confidence: 0.9,
            rotation: 90,
            size_pt: None,
            words: vec![],
        };
        assert!(cache.get("abc").is_none());
        cache.put("abc", &page);
        assert_eq!(cache.get("abc"), Some(page.clone()));
        cache.put("../escape", &page);
        assert!(cache.get("../escape").is_none());
        assert!(!dir.path().join("escape.json").exists());
        fs::write(cache.dir().join("bad.json"), b"{not json").unwrap();
        assert!(cache.get("bad").is_none());
        let leftovers = fs::read_dir(cache.dir()).unwrap().filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".tmp")
        });
        assert_eq!(leftovers.count(), 0);
    }
}
