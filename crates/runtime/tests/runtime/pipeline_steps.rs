//! The roles stepped by hand on a real PostgreSQL and Redis: intake → dispatch → work →
//! finalize → one decision.

use ironclad_runtime::worker::Handled;
use ironclad_testkit::harness::Pipeline;

#[tokio::test]
async fn a_case_flows_to_exactly_one_decision() -> anyhow::Result<()> {
    let p = Pipeline::start().await?;
    let case = p.submit_case(2).await?;
    let dispatcher = p.dispatcher().await?;
    let worker = p.standin_worker("w1").await?;

    assert_eq!(dispatcher.tick().await?.published, 2);
    let handled = worker.poll_once().await?;
    assert_eq!(handled, vec![Handled::Succeeded, Handled::Succeeded]);
    // The last source's success enqueued finalize in the same transaction.
    assert_eq!(dispatcher.tick().await?.published, 1);
    assert_eq!(worker.poll_once().await?, vec![Handled::Succeeded]);
    assert_eq!(p.case_status(case).await?, "AWAITING_REVIEW");
    assert_eq!(p.assert_effects_once().await?, 1);
    assert_eq!(dispatcher.tick().await?.claimed, 0);
    p.finish().await;
    Ok(())
}
