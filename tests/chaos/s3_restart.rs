//! The blobs live in S3-compatible object storage (`IRONCLAD_BLOB_URL=s3://…`), and the object
//! store is killed (SIGKILL) while cases are uploaded and read, then restarted with what it had
//! acknowledged. Uploads in flight retry and finish once it is back (their 201 comes after the
//! bytes are stored); an API whose retry budget is shorter than the outage answers 503
//! `storage_unavailable` and commits nothing; workers that cannot download retry; in the end
//! every case is decided exactly once and `ironclad verify` finds every blob, hashed from the
//! object store itself.

use crate::support::{listen_addr, secs, submit_cases, Api, Rig, SETTLE};
use anyhow::{ensure, Context, Result};
use ironclad_testkit::s3::S3Server;
use std::time::{Duration, Instant};

const BEFORE: usize = 6;
const DURING: usize = 4;
const OUTAGE: Duration = Duration::from_secs(4);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_killed_mid_upload_and_restarted() {
    let s3 = S3Server::start().expect("s3rver (scripts/test installs it under target/s3rver)");
    let rig = Rig::new("s3_restart").await.expect("rig");
    let outcome = scenario(&rig, &s3).await;
    rig.conclude(outcome).await;
}

async fn scenario(rig: &Rig, s3: &S3Server) -> Result<()> {
    let url = s3.url(&format!("chaos-{}", rig.prefix));
    let mut env: Vec<(String, String)> = s3.env();
    env.push(("IRONCLAD_BLOB_URL".into(), url.clone()));
    // Long enough to ride out the outage: an upload retries rather than fail the request.
    env.push(("IRONCLAD_BLOB_RETRY_TIMEOUT".into(), "60s".into()));
    let (listen, port) = listen_addr()?;
    let mut all_env = env.clone();
    all_env.push(("IRONCLAD_LISTEN".into(), listen));
    all_env.push(("IRONCLAD_PROCESSOR".into(), "test:sleep=300ms".into()));
    let mut all = rig.role("all", "all", &pairs(&all_env))?;

    // A second API whose object store patience is shorter than the outage.
    let (impatient_listen, impatient_port) = listen_addr()?;
    let mut impatient_env = env.clone();
    impatient_env.retain(|(k, _)| k != "IRONCLAD_BLOB_RETRY_TIMEOUT");
    impatient_env.push(("IRONCLAD_BLOB_RETRY_TIMEOUT".into(), "1s".into()));
    impatient_env.push(("IRONCLAD_LISTEN".into(), impatient_listen));
    let mut impatient = rig.role("serve-impatient", "serve", &pairs(&impatient_env))?;

    let api = Api::new(rig, port)?;
    let impatient_api = Api::new(rig, impatient_port)?;
    api.wait_live(Duration::from_secs(30)).await?;
    impatient_api.wait_live(Duration::from_secs(30)).await?;

    submit_cases(&api, "before", BEFORE).await?;

    // Kill the store, then upload into the outage: the requests' first attempts fail.
    s3.kill()?;
    let killed = Instant::now();
    let during = tokio::spawn(async move {
        let ids = submit_cases(&api, "during", DURING).await;
        (api, ids)
    });
    let (status, body) = impatient_api
        .post_pdf("refused while the store is down")
        .await?;
    ensure!(
        status == 503 && body["error"]["code"] == "storage_unavailable",
        "an upload that cannot finish must be a 503 storage_unavailable, got {status}: {body}"
    );
    let refused_at = killed.elapsed();
    tokio::time::sleep(OUTAGE.saturating_sub(killed.elapsed())).await;
    s3.restart()?;
    println!(
        "[s3_restart] store down for {}; impatient API refused after {}",
        secs(killed.elapsed()),
        secs(refused_at)
    );
    let (_api, ids) = during.await.context("submitting during the outage")?;
    let ids = ids.context("an upload during the outage did not finish after the restart")?;
    ensure!(ids.len() == DURING);
    println!(
        "[s3_restart] {DURING} uploads started during the outage all answered 201 after {}",
        secs(killed.elapsed())
    );

    let cases = (BEFORE + DURING) as i64;
    rig.wait_decided(cases, SETTLE, false).await?;
    rig.assert_decided_exactly_once(cases).await?;
    // The refused request committed nothing: exactly the accepted cases exist.
    ensure!(rig.count("SELECT count(*) FROM cases").await? == cases);
    let objects = s3.objects(&format!("chaos-{}/sha256/", rig.prefix))?;
    ensure!(
        objects.len() == BEFORE + DURING,
        "expected one object per distinct file, found {objects:?}"
    );
    rig.cli_with(&["verify"], &pairs(&env))
        .context("ironclad verify against the object store")?;
    ensure!(all.is_running() && impatient.is_running(), "a role exited");
    Ok(())
}

fn pairs(env: &[(String, String)]) -> Vec<(&str, &str)> {
    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}
