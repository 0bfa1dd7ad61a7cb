//! The blob store on S3-compatible object storage (s3rver, started by each test): bytes come
//! back verified on another "host" (another local cache), a damaged object is refused, an
//! upload rides out the server killed mid-upload and restarted, an upload that cannot finish
//! fails cleanly, and the sweep parks orphans before deleting them and gives back one that
//! became referenced.

use anyhow::{ensure, Context, Result};
use ironclad_blobs::{BlobError, BlobStore, RemoteSettings, StoredBlob};
use ironclad_testkit::s3::S3Server;
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// A store on `s3` under `prefix`, with its own local cache (one per simulated host).
fn host(s3: &S3Server, prefix: &str, retry: Duration) -> Result<(BlobStore, tempfile::TempDir)> {
    let cache = tempfile::tempdir()?;
    let store = BlobStore::open_url(
        &s3.url(prefix),
        cache.path(),
        RemoteSettings {
            retry_timeout: retry,
            options: s3.options(),
            ..Default::default()
        },
    )?;
    Ok((store, cache))
}

/// Bytes that differ per call and do not compress.
fn random_bytes(len: usize) -> Vec<u8> {
    let mut state = uuid::Uuid::new_v4().as_u128() as u64 | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

async fn store(blobs: &BlobStore, bytes: &[u8]) -> Result<StoredBlob, BlobError> {
    let mut writer = blobs.writer().await?;
    for chunk in bytes.chunks(1 << 20) {
        writer.write(chunk).await?;
    }
    writer.finish().await
}

fn temp_files(cache: &tempfile::TempDir) -> Result<usize> {
    Ok(std::fs::read_dir(cache.path().join("tmp"))?.count())
}

#[tokio::test]
async fn blobs_written_on_one_host_are_read_verified_on_another() -> Result<()> {
    let s3 = S3Server::start()?;
    let (a, _a_dir) = host(&s3, "two-hosts", Duration::from_secs(10))?;
    let (b, b_dir) = host(&s3, "two-hosts", Duration::from_secs(10))?;
    let small = random_bytes(10_000);
    // Larger than one part: goes up as a multipart upload.
    let large = random_bytes(20 * 1024 * 1024 + 17);
    let small_blob = store(&a, &small).await?;
    let large_blob = store(&a, &large).await?;
    let objects = s3.objects("two-hosts/sha256/")?;
    ensure!(
        objects == {
            let mut want = vec![
                format!("two-hosts/{}", small_blob.key),
                format!("two-hosts/{}", large_blob.key),
            ];
            want.sort();
            want
        },
        "objects: {objects:?}"
    );
    ensure!(b.exists(&large_blob.key).await?);
    ensure!(b.read(&small_blob.key).await? == small);
    let path = b.local_path(&large_blob.key).await?;
    ensure!(
        path.starts_with(b_dir.path()),
        "{path:?} is not in B's cache"
    );
    ensure!(std::fs::read(&path)? == large);
    let digest = b
        .digest(&large_blob.key)
        .await?
        .context("digest of a stored blob")?;
    ensure!(digest.size == large.len() as u64 && digest.sha256 == large_blob.sha256);
    ensure!(temp_files(&b_dir)? == 0, "a download left a temp file");
    // Content addressing: the same bytes again are the same object.
    ensure!(store(&b, &small).await?.key == small_blob.key);
    ensure!(s3.objects("two-hosts/sha256/")?.len() == 2);
    // A key nobody stored is NotFound, not an error to retry.
    let absent = format!("sha256/00/00/{}", "0".repeat(64));
    ensure!(matches!(
        b.read(&absent).await,
        Err(BlobError::NotFound { .. })
    ));
    ensure!(!b.exists(&absent).await?);
    Ok(())
}

#[tokio::test]
async fn a_damaged_object_is_refused_on_read_and_leaves_nothing_behind() -> Result<()> {
    let s3 = S3Server::start()?;
    let (a, _a_dir) = host(&s3, "damaged", Duration::from_secs(10))?;
    let (b, b_dir) = host(&s3, "damaged", Duration::from_secs(10))?;
    let bytes = random_bytes(50_000);
    let blob = store(&a, &bytes).await?;
    // Damage the object where the server keeps it: same size, one byte changed.
    let mut damaged = bytes.clone();
    damaged[1234] ^= 0xff;
    let file = s3.object_file(&format!("damaged/{}", blob.key))?;
    std::fs::write(&file, &damaged)?;
    match b.read(&blob.key).await {
        Err(BlobError::Corrupt { key, .. }) => ensure!(key == blob.key),
        other => anyhow::bail!("a damaged object must be refused, got {other:?}"),
    }
    ensure!(
        !b.path_of(&blob.key)?.exists(),
        "the damaged copy was cached"
    );
    ensure!(
        temp_files(&b_dir)? == 0,
        "the refused download left a temp file"
    );
    // verify (digest) reports what the store really holds.
    let digest = b.digest(&blob.key).await?.context("digest")?;
    ensure!(digest.sha256 != blob.sha256);
    Ok(())
}

#[tokio::test]
async fn an_upload_rides_out_the_server_killed_mid_upload_and_restarted() -> Result<()> {
    let s3 = S3Server::start()?;
    let (a, _a_dir) = host(&s3, "restart", Duration::from_secs(60))?;
    let (b, _b_dir) = host(&s3, "restart", Duration::from_secs(60))?;
    let before = random_bytes(100_000);
    let before_blob = store(&a, &before).await?;
    let large = random_bytes(96 * 1024 * 1024);
    let upload = {
        let a = a.clone();
        let large = large.clone();
        tokio::spawn(async move { store(&a, &large).await })
    };
    // Kill once the upload has reached the server: its first parts are on disk.
    let started = Instant::now();
    while s3.bytes_received()? == 0 {
        ensure!(
            started.elapsed() < Duration::from_secs(60) && !upload.is_finished(),
            "the upload never reached the server"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    ensure!(!upload.is_finished(), "the upload finished before the kill");
    s3.kill()?;
    println!("killed s3rver {:?} into the upload", started.elapsed());
    tokio::time::sleep(Duration::from_secs(2)).await;
    ensure!(
        !upload.is_finished(),
        "the upload gave up while the server was down"
    );
    s3.restart()?;
    let blob = upload.await??;
    ensure!(
        b.read(&blob.key).await? == large,
        "the object is not the bytes uploaded"
    );
    // What the server acknowledged before the kill survived it.
    ensure!(b.read(&before_blob.key).await? == before);
    Ok(())
}

#[tokio::test]
async fn an_upload_that_cannot_finish_fails_in_bounded_time_and_stores_nothing() -> Result<()> {
    let s3 = S3Server::start()?;
    let (a, a_dir) = host(&s3, "down", Duration::from_secs(2))?;
    s3.kill()?;
    let started = Instant::now();
    let outcome = store(&a, &random_bytes(300_000)).await;
    let took = started.elapsed();
    match &outcome {
        Err(err @ BlobError::Remote { .. }) => ensure!(err.is_retryable()),
        other => anyhow::bail!("expected a retryable object store error, got {other:?}"),
    }
    ensure!(
        took < Duration::from_secs(20),
        "gave up only after {took:?}"
    );
    ensure!(temp_files(&a_dir)? == 0);
    s3.restart()?;
    ensure!(
        s3.objects("down/")?.is_empty(),
        "a failed upload left an object"
    );
    Ok(())
}

#[tokio::test]
async fn the_sweep_parks_orphans_then_deletes_them_and_gives_back_a_late_reference() -> Result<()> {
    let s3 = S3Server::start()?;
    let (a, _a_dir) = host(&s3, "sweep", Duration::from_secs(10))?;
    let (b, _b_dir) = host(&s3, "sweep", Duration::from_secs(10))?;
    let kept = store(&a, &random_bytes(1000)).await?;
    let orphan = store(&a, &random_bytes(1000)).await?;
    let late = store(&a, &random_bytes(1000)).await?;
    // S3 dates have one-second resolution: let every object be older than a zero grace.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let referenced = |set: HashSet<String>| {
        move |keys: Vec<String>| {
            let set = set.clone();
            async move {
                Ok::<_, std::convert::Infallible>(
                    keys.into_iter().filter(|k| set.contains(k)).collect(),
                )
            }
        }
    };
    let only_kept: HashSet<String> = [kept.key.clone()].into();
    let first = a
        .sweep(Duration::ZERO, referenced(only_kept.clone()))
        .await?;
    ensure!(
        first.parked == 2 && first.kept_referenced == 1 && first.deleted == 0,
        "{first:?}"
    );
    ensure!(s3.objects("sweep/sha256/")? == vec![format!("sweep/{}", kept.key)]);
    ensure!(s3.objects("sweep/trash/")?.len() == 2);
    // A row naming `late` commits now (its writer finished before the sweep listed it): a
    // reader on another host still gets the bytes, from the parked copy.
    let bytes = b.read(&late.key).await?;
    ensure!(bytes.len() == 1000);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let with_late: HashSet<String> = [kept.key.clone(), late.key.clone()].into();
    let second = a.sweep(Duration::ZERO, referenced(with_late)).await?;
    ensure!(second.deleted == 1, "{second:?}");
    ensure!(s3.objects("sweep/trash/")?.is_empty());
    let live: HashSet<String> = s3.objects("sweep/sha256/")?.into_iter().collect();
    ensure!(
        live == [format!("sweep/{}", kept.key), format!("sweep/{}", late.key)].into(),
        "{live:?}"
    );
    ensure!(!b.exists(&orphan.key).await?, "the orphan survived");
    Ok(())
}
