//! The blob store against a real directory: writes, key checks, clean-up and the sweep.

use ironclad_blobs::{BlobError, BlobStore, BlobWriter, StoredBlob, SweepReport};
use std::collections::HashSet;
use std::convert::Infallible;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::Mutex;

const HELLO_SHA256: &str = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";
const GRACE: Duration = Duration::from_secs(600);

fn store() -> (tempfile::TempDir, BlobStore) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = BlobStore::open(dir.path().join("blobs")).expect("open store");
    (dir, store)
}

async fn put(store: &BlobStore, content: &[u8]) -> StoredBlob {
    let mut w = store.writer().await.expect("writer");
    w.write(content).await.expect("write");
    w.finish().await.expect("finish")
}

/// Pretends a file was last written an hour ago.
fn age(path: &Path) {
    let old = SystemTime::now() - Duration::from_secs(3600);
    fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(old))
        .expect("set mtime");
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

fn no_refs(_: Vec<String>) -> std::future::Ready<Result<HashSet<String>, Infallible>> {
    std::future::ready(Ok(HashSet::new()))
}

#[tokio::test]
async fn finish_stores_under_the_sha256_and_reads_back() {
    let (_dir, store) = store();
    let mut w = store.writer().await.expect("writer");
    assert!(w.is_empty());
    w.write(b"hel").await.expect("write");
    w.write(b"lo").await.expect("write");
    assert_eq!(w.len(), 5);
    let blob = w.finish().await.expect("finish");

    assert_eq!(blob.sha256, HELLO_SHA256);
    assert_eq!(blob.key, format!("sha256/2c/f2/{HELLO_SHA256}"));
    assert_eq!(blob.size, 5);
    assert_eq!(blob.path, store.root().join(&blob.key));
    assert_eq!(fs::read(&blob.path).expect("read file"), b"hello");
    assert_eq!(store.read(&blob.key).await.expect("read"), b"hello");
    assert!(store.exists(&blob.key).await.expect("exists"));
    assert!(files_under(&store.root().join("tmp")).is_empty());
}

#[tokio::test]
async fn same_content_twice_is_one_file_and_touches_it() {
    let (_dir, store) = store();
    let first = put(&store, b"same bytes").await;
    age(&first.path);
    let second = put(&store, b"same bytes").await;
    assert_eq!(
        (&first.key, &first.sha256, first.size, &first.path),
        (&second.key, &second.sha256, second.size, &second.path)
    );
    assert!(first.created, "the first writer put the bytes in place");
    assert!(!second.created, "the second only found them stored");
    assert_eq!(files_under(&store.root().join("sha256")).len(), 1);
    assert!(files_under(&store.root().join("tmp")).is_empty());
    // The duplicate upload refreshed the stored copy so a running sweep keeps it.
    let mtime = fs::metadata(&second.path)
        .and_then(|m| m.modified())
        .expect("mtime");
    assert!(mtime > SystemTime::now() - Duration::from_secs(60));
}

#[tokio::test]
async fn empty_blob_is_fine() {
    let (_dir, store) = store();
    let w = store.writer().await.expect("writer");
    let blob = w.finish().await.expect("finish");
    assert_eq!(blob.size, 0);
    assert_eq!(
        blob.sha256,
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
}

#[tokio::test]
async fn unknown_and_malformed_keys() {
    let (_dir, store) = store();
    let missing = format!("sha256/2c/f2/{HELLO_SHA256}");
    assert!(!store.exists(&missing).await.expect("exists"));
    assert!(matches!(
        store.read(&missing).await,
        Err(BlobError::NotFound { .. })
    ));
    for key in [
        "../x".to_owned(),
        "sha256/../../etc/passwd".to_owned(),
        format!("sha256/2c/f2/{}", &HELLO_SHA256[..63]),
        format!("sha256/2c/f2/{HELLO_SHA256}a"),
        format!("sha256/2C/F2/{}", HELLO_SHA256.to_uppercase()),
        format!("sha256/2c/f2/{HELLO_SHA256}/../../../x"),
    ] {
        assert!(matches!(
            store.path_of(&key),
            Err(BlobError::InvalidKey { .. })
        ));
        assert!(matches!(
            store.read(&key).await,
            Err(BlobError::InvalidKey { .. })
        ));
    }
}

#[tokio::test]
async fn abort_and_drop_leave_no_temp_file() {
    let (_dir, store) = store();
    let tmp = store.root().join("tmp");

    let mut w = store.writer().await.expect("writer");
    w.write(b"partial").await.expect("write");
    assert_eq!(files_under(&tmp).len(), 1);
    w.abort().await;
    assert!(files_under(&tmp).is_empty());

    let mut w = store.writer().await.expect("writer");
    w.write(b"partial").await.expect("write");
    drop(w);
    assert!(files_under(&tmp).is_empty());
    assert!(files_under(&store.root().join("sha256")).is_empty());
}

#[tokio::test]
async fn sweep_deletes_old_orphans_and_keeps_the_rest() {
    let (_dir, store) = store();
    let orphan = put(&store, b"orphan").await;
    let referenced = put(&store, b"referenced").await;
    let fresh = put(&store, b"fresh").await;
    age(&orphan.path);
    age(&referenced.path);

    // An abandoned upload, old, and one in progress.
    let mut stale = store.writer().await.expect("writer");
    stale.write(b"abandoned").await.expect("write");
    let stale_temp = files_under(&store.root().join("tmp"));
    assert_eq!(stale_temp.len(), 1);
    age(&stale_temp[0]);
    std::mem::forget(stale); // a crashed process never runs Drop
    let mut live = store.writer().await.expect("writer");
    live.write(b"in progress").await.expect("write");

    let calls = Arc::new(Mutex::new(Vec::new()));
    let referenced_key = referenced.key.clone();
    let seen = calls.clone();
    let report = store
        .sweep(GRACE, move |keys: Vec<String>| {
            let seen = seen.clone();
            let referenced_key = referenced_key.clone();
            async move {
                seen.lock().await.push(keys.clone());
                Ok::<_, Infallible>(keys.into_iter().filter(|k| *k == referenced_key).collect())
            }
        })
        .await
        .expect("sweep");

    assert_eq!(
        report,
        SweepReport {
            examined: 3,
            deleted: 1,
            kept_referenced: 1,
            kept_fresh: 1,
            temp_removed: 1,
            parked: 0,
        }
    );
    assert!(!store.exists(&orphan.key).await.expect("exists"));
    assert!(store.exists(&referenced.key).await.expect("exists"));
    assert!(store.exists(&fresh.key).await.expect("exists"));
    assert!(files_under(&store.root().join("trash")).is_empty());
    // Fresh blobs are never even offered to the reference check; the orphan was asked twice.
    let calls = calls.lock().await;
    assert_eq!(calls.len(), 2);
    assert!(!calls.iter().flatten().any(|k| *k == fresh.key));
    assert_eq!(calls[1], vec![orphan.key.clone()]);

    // The live upload survives and still finishes.
    assert_eq!(live.finish().await.expect("finish").size, 11);
}

/// A request stores the same content while the sweep runs: finishing it during the first or
/// the second reference check must never lose the blob.
#[tokio::test]
async fn writer_finishing_during_sweep_is_not_lost() {
    for finish_on_call in [0, 1] {
        let (_dir, store) = store();
        let blob = put(&store, b"shared content").await;
        age(&blob.path);

        let mut w = store.writer().await.expect("writer");
        w.write(b"shared content").await.expect("write");
        let pending: Arc<Mutex<Option<BlobWriter>>> = Arc::new(Mutex::new(Some(w)));
        let calls = Arc::new(AtomicUsize::new(0));
        let (p, c) = (pending.clone(), calls.clone());
        let report = store
            .sweep(GRACE, move |_keys: Vec<String>| {
                let (pending, n) = (p.clone(), c.fetch_add(1, Ordering::SeqCst));
                async move {
                    if n == finish_on_call {
                        if let Some(w) = pending.lock().await.take() {
                            let stored = w.finish().await.map_err(|e| e.to_string())?;
                            assert_eq!(stored.sha256, blob_sha(&stored.path));
                        }
                    }
                    // The request has not committed yet: nothing references the key.
                    Ok::<_, String>(HashSet::new())
                }
            })
            .await
            .expect("sweep");

        assert!(pending.lock().await.is_none(), "writer was finished");
        assert_eq!(
            report.deleted, 0,
            "finish on call {finish_on_call}: {report:?}"
        );
        assert_eq!(report.kept_fresh, 1);
        assert_eq!(
            store.read(&blob.key).await.expect("blob survives"),
            b"shared content"
        );
        assert!(files_under(&store.root().join("trash")).is_empty());
        assert!(files_under(&store.root().join("tmp")).is_empty());
    }
}

fn blob_sha(path: &Path) -> String {
    path.file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn failed_reference_check_puts_everything_back() {
    for fail_on_call in [0, 1] {
        let (_dir, store) = store();
        let blob = put(&store, b"maybe orphan").await;
        age(&blob.path);
        let calls = Arc::new(AtomicUsize::new(0));
        let c = calls.clone();
        let result = store
            .sweep(GRACE, move |_keys: Vec<String>| {
                let n = c.fetch_add(1, Ordering::SeqCst);
                async move {
                    if n == fail_on_call {
                        Err("database unavailable")
                    } else {
                        Ok(HashSet::new())
                    }
                }
            })
            .await;
        assert!(
            matches!(result, Err(BlobError::ReferenceCheck(ref m)) if m.contains("database unavailable"))
        );
        assert!(store.exists(&blob.key).await.expect("exists"));
        assert!(files_under(&store.root().join("trash")).is_empty());
    }
}

#[tokio::test]
async fn a_later_sweep_restores_what_an_interrupted_one_parked() {
    let (_dir, store) = store();
    let blob = put(&store, b"parked").await;
    age(&blob.path);
    // As if a sweep crashed between parking and deciding.
    let trash = store
        .root()
        .join("trash")
        .join(format!("{}.deadbeef", blob.sha256));
    fs::rename(&blob.path, &trash).expect("park");
    assert!(!store.exists(&blob.key).await.expect("exists"));

    let key = blob.key.clone();
    let report = store
        .sweep(GRACE, move |keys: Vec<String>| {
            let key = key.clone();
            async move { Ok::<_, Infallible>(keys.into_iter().filter(|k| *k == key).collect()) }
        })
        .await
        .expect("sweep");
    assert_eq!(report.kept_referenced, 1);
    assert_eq!(report.deleted, 0);
    assert!(store.exists(&blob.key).await.expect("exists"));
    assert!(files_under(&store.root().join("trash")).is_empty());
}

#[tokio::test]
async fn an_upload_idle_past_the_grace_fails_cleanly() {
    let (_dir, store) = store();
    let mut w = store.writer().await.expect("writer");
    w.write(b"slow upload").await.expect("write");
    for temp in files_under(&store.root().join("tmp")) {
        age(&temp);
    }
    let report = store.sweep(GRACE, no_refs).await.expect("sweep");
    assert_eq!(report.temp_removed, 1);
    assert!(matches!(w.finish().await, Err(BlobError::Io { .. })));
    assert!(files_under(&store.root().join("sha256")).is_empty());
}

#[tokio::test]
async fn stray_files_are_left_alone() {
    let (_dir, store) = store();
    let stray = store.root().join("sha256").join("2c").join("f2");
    fs::create_dir_all(&stray).expect("mkdir");
    let stray = stray.join("README");
    fs::write(&stray, b"not a blob").expect("write");
    age(&stray);
    let report = store.sweep(GRACE, no_refs).await.expect("sweep");
    assert_eq!(report.examined, 0);
    assert!(stray.exists());
}

/// Damages the stored copy in place (same inode, same length, wrong bytes).
fn damage_in_place(path: &Path, damaged: &[u8]) {
    use std::io::Write;
    let mut f = fs::File::options()
        .write(true)
        .truncate(true)
        .open(path)
        .expect("open stored blob");
    f.write_all(damaged).expect("write damaged bytes");
    f.sync_all().expect("sync");
}

/// A stored copy with the right length but the wrong bytes (bit rot, a file truncated then
/// padded) must not be trusted: `finish` puts the uploaded bytes in its place.
#[tokio::test]
async fn a_same_size_damaged_blob_is_replaced_by_finish() {
    let content = b"dossier page bytes";
    let mut flipped = content.to_vec();
    flipped[3] ^= 0x01;
    let mut padded = content[..7].to_vec();
    padded.resize(content.len(), 0);
    for damaged in [flipped, padded] {
        let (_dir, store) = store();
        let original = put(&store, content).await;
        damage_in_place(&original.path, &damaged);
        age(&original.path);

        let again = put(&store, content).await;
        assert_eq!(again.key, original.key);
        // The key existed before this writer: rows may name it, so it is not ours to discard.
        assert!(!again.created);
        assert_eq!(store.read(&again.key).await.expect("read"), content);
        assert_eq!(files_under(&store.root().join("sha256")).len(), 1);
        assert!(files_under(&store.root().join("tmp")).is_empty());
    }
}

/// The dedupe path must keep touching the stored copy (the sweep relies on it) and keep the
/// verified copy itself rather than replace it.
#[tokio::test]
async fn deduplicating_touches_and_keeps_the_verified_copy() {
    use std::os::unix::fs::MetadataExt;
    let (_dir, store) = store();
    let first = put(&store, b"shared bytes").await;
    age(&first.path);
    let before = fs::metadata(&first.path).expect("metadata");

    let second = put(&store, b"shared bytes").await;
    let after = fs::metadata(&second.path).expect("metadata");
    assert_eq!(after.ino(), before.ino(), "the verified copy was kept");
    let mtime = after.modified().expect("mtime");
    assert!(mtime > SystemTime::now() - Duration::from_secs(60));
    assert!(files_under(&store.root().join("tmp")).is_empty());
}

/// A `referenced` callback that records every call and reports `keep` as referenced.
#[allow(clippy::type_complexity)]
fn recording(
    keep: Option<String>,
) -> (
    Arc<std::sync::Mutex<Vec<Vec<String>>>>,
    impl FnMut(Vec<String>) -> std::future::Ready<Result<HashSet<String>, Infallible>>,
) {
    let calls = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = calls.clone();
    let callback = move |keys: Vec<String>| {
        if let Ok(mut seen) = seen.lock() {
            seen.push(keys.clone());
        }
        let refs = keys.into_iter().filter(|k| Some(k) == keep.as_ref());
        std::future::ready(Ok(refs.collect()))
    };
    (calls, callback)
}

fn calls_of(calls: &std::sync::Mutex<Vec<Vec<String>>>) -> Vec<Vec<String>> {
    calls.lock().map(|c| c.clone()).unwrap_or_default()
}

#[tokio::test]
async fn discard_deletes_an_unreferenced_blob_it_created() {
    let (_dir, store) = store();
    let blob = put(&store, b"part of a failed request").await;
    assert!(blob.created);
    let (calls, referenced) = recording(None);

    let deleted = store
        .discard_created(std::slice::from_ref(&blob), referenced)
        .await
        .expect("discard");

    assert_eq!(deleted, 1);
    assert!(!store.exists(&blob.key).await.expect("exists"));
    assert!(files_under(&store.root().join("sha256")).is_empty());
    assert!(files_under(&store.root().join("trash")).is_empty());
    assert_eq!(calls_of(&calls), vec![vec![blob.key.clone()]]);
}

/// Content that was already stored may belong to other cases: never ours to discard.
#[tokio::test]
async fn discard_skips_blobs_it_only_deduplicated() {
    let (_dir, store) = store();
    let other_case = put(&store, b"shared invoice").await;
    let ours = put(&store, b"shared invoice").await;
    assert!(!ours.created);
    let (calls, referenced) = recording(None);

    let deleted = store
        .discard_created(&[ours], referenced)
        .await
        .expect("discard");

    assert_eq!(deleted, 0);
    assert_eq!(
        store.read(&other_case.key).await.expect("kept"),
        b"shared invoice"
    );
    assert!(calls_of(&calls).is_empty(), "nothing was a candidate");
}

/// Another request finished the same content after ours (it deduplicated against our blob
/// and may be about to commit a row naming it): our failed request must not delete it.
#[tokio::test]
async fn discard_keeps_a_blob_another_writer_deduplicated_against() {
    let (_dir, store) = store();
    let ours = put(&store, b"popular attachment").await;
    let theirs = put(&store, b"popular attachment").await;
    assert!(ours.created && !theirs.created);

    let deleted = store
        .discard_created(std::slice::from_ref(&ours), no_refs)
        .await
        .expect("discard");

    assert_eq!(deleted, 0);
    assert_eq!(
        store.read(&theirs.key).await.expect("kept"),
        b"popular attachment"
    );
    assert!(files_under(&store.root().join("trash")).is_empty());
}

/// Another writer replaced the file at our key (same bytes, even the same mtime): the file
/// there is not the one we created, so it is not ours to delete.
#[tokio::test]
async fn discard_keeps_a_blob_replaced_since_it_was_created() {
    let (_dir, store) = store();
    let ours = put(&store, b"replaced bytes").await;
    let mtime = fs::metadata(&ours.path)
        .and_then(|m| m.modified())
        .expect("mtime");
    let other = store.root().join("other-copy");
    fs::write(&other, b"replaced bytes").expect("write");
    fs::File::options()
        .write(true)
        .open(&other)
        .and_then(|f| f.set_modified(mtime))
        .expect("same mtime");
    fs::rename(&other, &ours.path).expect("replace");

    let deleted = store
        .discard_created(std::slice::from_ref(&ours), no_refs)
        .await
        .expect("discard");

    assert_eq!(deleted, 0);
    assert_eq!(
        store.read(&ours.key).await.expect("kept"),
        b"replaced bytes"
    );
}

#[tokio::test]
async fn discard_keeps_a_blob_that_rows_reference() {
    let (_dir, store) = store();
    let blob = put(&store, b"named by a committed row").await;
    let (calls, referenced) = recording(Some(blob.key.clone()));

    let deleted = store
        .discard_created(std::slice::from_ref(&blob), referenced)
        .await
        .expect("discard");

    assert_eq!(deleted, 0);
    assert_eq!(
        store.read(&blob.key).await.expect("kept"),
        b"named by a committed row"
    );
    assert!(files_under(&store.root().join("trash")).is_empty());
    assert_eq!(calls_of(&calls).len(), 1);
}

/// If the reference check fails, nothing is deleted and the error is returned.
#[tokio::test]
async fn failed_reference_check_during_discard_deletes_nothing() {
    let (_dir, store) = store();
    let blob = put(&store, b"unknown fate").await;

    let result = store
        .discard_created(std::slice::from_ref(&blob), |_keys: Vec<String>| async {
            Err::<HashSet<String>, _>("database unavailable")
        })
        .await;

    assert!(
        matches!(result, Err(BlobError::ReferenceCheck(ref m)) if m.contains("database unavailable")),
        "{result:?}"
    );
    assert!(result.as_ref().is_err_and(BlobError::is_retryable));
    assert_eq!(store.read(&blob.key).await.expect("kept"), b"unknown fate");
    assert!(files_under(&store.root().join("trash")).is_empty());
}

/// One failed request with three blobs: one it created alone (deleted), one it found already
/// stored (skipped), one it created that another request then deduplicated against (kept).
/// Only the first is offered to the reference check.
#[tokio::test]
async fn a_failed_request_discards_only_what_nobody_else_uses() {
    let (_dir, store) = store();
    let pre_existing = put(&store, b"stored by an earlier case").await;

    let alone = put(&store, b"only this request").await;
    let found = put(&store, b"stored by an earlier case").await;
    let shared = put(&store, b"also sent by a concurrent request").await;
    let _concurrent = put(&store, b"also sent by a concurrent request").await;
    let (calls, referenced) = recording(None);

    let deleted = store
        .discard_created(
            &[alone.clone(), found.clone(), shared.clone(), alone.clone()],
            referenced,
        )
        .await
        .expect("discard");

    assert_eq!(deleted, 1);
    assert!(!store.exists(&alone.key).await.expect("exists"));
    assert!(store.exists(&pre_existing.key).await.expect("exists"));
    assert!(store.exists(&shared.key).await.expect("exists"));
    assert_eq!(calls_of(&calls), vec![vec![alone.key.clone()]]);
    assert!(files_under(&store.root().join("trash")).is_empty());
}

/// A blob that a request found already stored may not be discarded even if the caller flips
/// its public `created` flag: the proof of creation is private to the store.
#[tokio::test]
async fn flipping_created_does_not_make_a_blob_discardable() {
    let (_dir, store) = store();
    let _first = put(&store, b"someone else's").await;
    let mut found = put(&store, b"someone else's").await;
    found.created = true;

    let deleted = store
        .discard_created(&[found.clone()], no_refs)
        .await
        .expect("discard");

    assert_eq!(deleted, 0);
    assert!(store.exists(&found.key).await.expect("exists"));
}

/// The caller may clear `created` (e.g. it learnt the content is shared): the blob is skipped.
#[tokio::test]
async fn a_blob_marked_not_created_is_never_discarded() {
    let (_dir, store) = store();
    let mut blob = put(&store, b"kept on the caller's word").await;
    blob.created = false;

    let deleted = store
        .discard_created(std::slice::from_ref(&blob), no_refs)
        .await
        .expect("discard");

    assert_eq!(deleted, 0);
    assert!(store.exists(&blob.key).await.expect("exists"));
}

/// Of several writers finishing the same new content at once, exactly one creates the file
/// (the others deduplicate), so at most one of them may ever discard it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_one_of_concurrent_writers_creates() {
    for _ in 0..20 {
        let (_dir, store) = store();
        let mut writers = Vec::new();
        for _ in 0..4 {
            let mut w = store.writer().await.expect("writer");
            w.write(b"raced content").await.expect("write");
            writers.push(w);
        }
        let handles: Vec<_> = writers
            .into_iter()
            .map(|w| tokio::spawn(w.finish()))
            .collect();
        let mut created = 0;
        for h in handles {
            let blob = h.await.expect("join").expect("finish");
            created += usize::from(blob.created);
        }
        assert_eq!(created, 1);
        assert_eq!(files_under(&store.root().join("sha256")).len(), 1);
        assert!(files_under(&store.root().join("tmp")).is_empty());
    }
}
