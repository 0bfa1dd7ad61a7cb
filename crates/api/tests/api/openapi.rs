//! `/openapi.json` describes exactly the routes the router serves.
//!
//! axum cannot list a router's routes, so the router side is read two ways, and each is
//! checked against the document:
//! - the source: every `.route("…", get(…).post(…))` in `src/routes/*.rs` and
//!   `src/openapi.rs` (a new route file is read too). A `.route(` whose path is not a string
//!   literal, or a `.nest(`/`.route_service(`, fails the test rather than hiding a route;
//! - the running server: each documented operation, called without a key, must reach a
//!   handler (not the 404/405 fallbacks), and answer 401 exactly when the document says
//!   it needs the API key.
//!
//! Together: source == document, and document ⊆ what the server serves. (A handler-level
//! list kept by hand next to the router would drift the same way the document can.)

use crate::helpers::TestApp;
use ironclad_core::role::Role;
use reqwest::{Method, StatusCode};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

type Operation = (String, String);

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

/// The (method, path) pairs the route sources declare.
fn routes_in_source() -> anyhow::Result<BTreeSet<Operation>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![src.join("openapi.rs"), src.join("router.rs")];
    for entry in std::fs::read_dir(src.join("routes"))? {
        files.push(entry?.path());
    }
    let mut found = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(&file)?;
        let name = file.display();
        for forbidden in [".nest(", ".nest_service(", ".route_service("] {
            anyhow::ensure!(
                !text.contains(forbidden),
                "{name}: `{forbidden}` routes are not read by this test; extend it"
            );
        }
        for (at, _) in text.match_indices(".route(") {
            let rest = &text[at + ".route(".len()..];
            let rest = rest.trim_start();
            let path = rest
                .strip_prefix('"')
                .and_then(|r| r.split_once('"'))
                .map(|(path, _)| path)
                .ok_or_else(|| anyhow::anyhow!("{name}: a .route( without a literal path"))?;
            let handlers = call_arguments(rest)
                .ok_or_else(|| anyhow::anyhow!("{name}: unbalanced .route( for {path}"))?;
            let methods = methods_in(handlers);
            anyhow::ensure!(!methods.is_empty(), "{name}: no method for {path}");
            for method in methods {
                anyhow::ensure!(
                    found.insert((method.clone(), path.to_owned())),
                    "{name}: {method} {path} is routed twice"
                );
            }
        }
    }
    Ok(found)
}

/// The text of a call's arguments, from just after its `(` to the matching `)`.
fn call_arguments(text: &str) -> Option<&str> {
    let mut depth = 1usize;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&text[..i]);
                }
            }
            _ => {}
        }
    }
    None
}

/// `get`, `post`, … called in a method router such as `get(list).post(create)`.
fn methods_in(handlers: &str) -> Vec<String> {
    let mut methods = Vec::new();
    for method in METHODS {
        let call = format!("{method}(");
        for (at, _) in handlers.match_indices(&call) {
            let before = handlers[..at].chars().next_back();
            // `get(` alone or after `.`/`,`/space, not `forget(` or `get_one(`.
            if before.is_none_or(|c| !(c.is_alphanumeric() || c == '_')) {
                methods.push(method.to_owned());
            }
        }
    }
    methods
}

/// The (method, path) pairs the document describes, each with whether it needs the key.
fn operations_in(doc: &Value) -> anyhow::Result<Vec<(Operation, bool)>> {
    let global = &doc["security"];
    let paths = doc["paths"]
        .as_object()
        .ok_or_else(|| anyhow::anyhow!("no paths"))?;
    let mut operations = Vec::new();
    for (path, item) in paths {
        for method in METHODS {
            let Some(operation) = item.get(method) else {
                continue;
            };
            let security = operation.get("security").unwrap_or(global);
            let open = security.as_array().is_some_and(|s| {
                s.iter()
                    .any(|r| r.as_object().is_some_and(|r| r.is_empty()))
            });
            operations.push(((method.to_owned(), path.clone()), !open));
        }
    }
    Ok(operations)
}

#[tokio::test]
async fn the_document_and_the_router_describe_the_same_routes() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let answer = app.get("/openapi.json", None).await?;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    let doc = answer.json();
    assert_eq!(doc["openapi"], "3.1.0");

    let documented = operations_in(&doc)?;
    let in_doc: BTreeSet<Operation> = documented.iter().map(|(op, _)| op.clone()).collect();
    let in_source = routes_in_source()?;
    assert!(
        in_source.len() >= 20,
        "the source parser found only {in_source:?}"
    );
    let undocumented: Vec<_> = in_source.difference(&in_doc).collect();
    let unrouted: Vec<_> = in_doc.difference(&in_source).collect();
    assert!(
        undocumented.is_empty() && unrouted.is_empty(),
        "routed but not documented: {undocumented:?}; documented but not routed: {unrouted:?}"
    );

    // Every documented operation reaches its handler, and asks for a key exactly when the
    // document says so.
    let id = uuid::Uuid::new_v4().to_string();
    for ((method, path), needs_key) in &documented {
        let url = app.url(&path.replace("{id}", &id));
        let method = Method::from_bytes(method.to_uppercase().as_bytes())?;
        let response = app.client.request(method.clone(), url).send().await?;
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        let code = body["error"]["code"].as_str().unwrap_or_default();
        assert!(
            code != "not_found" && code != "method_not_allowed",
            "{method} {path}: the router does not serve it ({status} {code})"
        );
        if *needs_key {
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {path}");
        } else {
            assert!(status.is_success(), "{method} {path}: {status} {body}");
        }
    }
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn the_document_names_the_key_errors_and_the_multipart_intake() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let doc = app.get("/openapi.json", None).await?.json();

    let scheme = &doc["components"]["securitySchemes"]["api_key"];
    assert_eq!(
        (&scheme["type"], &scheme["scheme"]),
        (&Value::from("http"), &Value::from("bearer"))
    );
    let error = &doc["components"]["schemas"]["ErrorBody"];
    assert_eq!(error["required"], serde_json::json!(["error"]));

    // Every error answer of every operation is the error body.
    for ((method, path), needs_key) in operations_in(&doc)? {
        let responses = doc["paths"][&path][&method]["responses"]
            .as_object()
            .ok_or_else(|| anyhow::anyhow!("{method} {path}: no responses"))?;
        assert_eq!(
            responses.contains_key("401"),
            needs_key || path == "/metrics",
            "{method} {path}: 401"
        );
        for (status, response) in responses {
            if !status.starts_with('4') && !status.starts_with('5') || path == "/readyz" {
                continue;
            }
            let response = match response["$ref"].as_str() {
                Some(name) => {
                    let name = name.trim_start_matches("#/components/responses/");
                    &doc["components"]["responses"][name]
                }
                None => response,
            };
            assert_eq!(
                response["content"]["application/json"]["schema"]["$ref"],
                "#/components/schemas/ErrorBody",
                "{method} {path} {status}"
            );
        }
    }

    let intake = &doc["paths"]["/v1/cases"]["post"]["requestBody"]["content"];
    assert!(
        intake.get("multipart/form-data").is_some(),
        "intake is not multipart: {intake}"
    );
    app.stop().await;
    Ok(())
}

/// Found by `scripts/schemathesis`: U+0000 in free text reached PostgreSQL, whose `text`
/// cannot hold it, and came back as a 500. Every such field now refuses it as a client error.
#[tokio::test]
async fn text_with_u0000_is_refused_not_a_server_error() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let admin = app.key_for(app.tenant, Role::Admin).await?;
    let case = uuid::Uuid::new_v4();
    let ruleset = uuid::Uuid::new_v4();
    let nul = "a\u{0}b";
    let calls = [
        (
            "/v1/rulesets".to_owned(),
            serde_json::json!({"workflow": nul, "rules": []}),
        ),
        (
            format!("/v1/rulesets/{ruleset}/activate"),
            serde_json::json!({"comment": nul}),
        ),
        (
            format!("/v1/cases/{case}/reviews"),
            serde_json::json!({"action": "REJECT", "expected_decision_version": 1, "comment": nul}),
        ),
        (
            format!("/v1/cases/{case}/reprocess"),
            serde_json::json!({"reason": nul}),
        ),
    ];
    for (path, body) in calls {
        let response = app
            .client
            .post(app.url(&path))
            .bearer_auth(&admin)
            .header("Idempotency-Key", "nul-1")
            .json(&body)
            .send()
            .await?;
        let status = response.status();
        assert!(status.is_client_error(), "POST {path}: {status}");
    }
    let listed = app
        .client
        .get(app.url("/v1/rulesets"))
        .query(&[("workflow", nul)])
        .bearer_auth(&admin)
        .send()
        .await?;
    assert_eq!(listed.status(), StatusCode::BAD_REQUEST);
    app.stop().await;
    Ok(())
}
