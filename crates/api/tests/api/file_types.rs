//! Files are judged by their bytes: the wrong type is 415, a damaged or password-protected
//! document 422, a zero-byte file 422 `empty_file`, the same bytes twice 422, a pixel bomb
//! 413. Each answer names the file, and none leaves a row behind (invariant 1).

use crate::helpers::{Rows, TestApp};
use ironclad_inspect::fixtures;
use reqwest::StatusCode;

#[tokio::test]
async fn each_bad_file_is_refused_by_name_and_leaves_nothing() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let good = fixtures::pdf_with_pages(1, "good");
    let pdf = fixtures::pdf_with_pages(3, "cut short");
    let zip = b"PK\x03\x04\x14\x00\x00\x00\x08\x00 not really a zip".to_vec();
    let cases: Vec<(&str, Vec<u8>, StatusCode, &str)> = vec![
        (
            "photo.jpg",
            fixtures::html_as_jpeg(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
        ),
        (
            "archive.pdf",
            zip,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
        ),
        (
            "notes.txt",
            b"just some text\n".to_vec(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
        ),
        (
            "cut.pdf",
            fixtures::truncated(&pdf),
            StatusCode::UNPROCESSABLE_ENTITY,
            "unreadable_file",
        ),
        (
            "locked.pdf",
            fixtures::encrypted_pdf(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "unreadable_file",
        ),
        (
            "empty.pdf",
            Vec::new(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "empty_file",
        ),
        (
            "bomb.png",
            fixtures::png_bomb_header(100_000, 100_000),
            StatusCode::PAYLOAD_TOO_LARGE,
            "document_too_large",
        ),
    ];
    for (name, bytes, status, code) in cases {
        // A good file first, so refusing the second one must not commit the first.
        let answer = app.submit(&[("good.pdf", &good), (name, &bytes)]).await?;
        assert_eq!(
            (answer.status, answer.code().as_str()),
            (status, code),
            "{name}: {}",
            answer.text()
        );
        assert_eq!(
            answer.json()["error"]["details"]["filename"],
            name,
            "{name}"
        );
    }

    let html = app
        .submit(&[("photo.jpg", &fixtures::html_as_jpeg())])
        .await?;
    assert_eq!(html.json()["error"]["details"]["detected"], "text/html");

    let dup = app
        .submit(&[("a.pdf", &good), ("copy-of-a.pdf", &good)])
        .await?;
    assert_eq!(
        (dup.status, dup.code().as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, "duplicate_file")
    );
    assert_eq!(
        dup.json()["error"]["details"]["filenames"],
        serde_json::json!(["a.pdf", "copy-of-a.pdf"])
    );

    assert_eq!(app.rows().await?, Rows::default());
    assert_eq!(app.temp_files()?, 0);
    app.stop().await;
    Ok(())
}
