//! Page images for the case page: rendered on demand from the stored file, kept in a bounded
//! in-memory cache, and at most a few rendered at once.

use crate::error::ApiError;
use crate::state::AppState;
use crate::ui::page::DeskError;
use crate::ui::session::DeskUser;
use axum::body::Body;
use axum::extract::{Extension, Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use ironclad_core::media::MediaType;
use ironclad_core::CaseId;
use ironclad_documents::preview::PreviewError;
use moka::future::Cache;
use std::sync::Arc;
use tokio::sync::Semaphore;
use uuid::Uuid;

/// The longer side of a page image, in pixels: sharp on a 1280-wide screen's page column.
pub const PREVIEW_MAX_SIDE: u32 = 1400;
/// Pages rendered at once by one process (each takes a core for ≈0.1–0.5 s).
const RENDERS_AT_ONCE: usize = 2;

/// Rendered pages by (source, page, rotation), bounded in bytes; clones share it.
#[derive(Clone)]
pub struct PreviewCache {
    pages: Cache<(Uuid, u32, i16), Bytes>,
    renders: Arc<Semaphore>,
}

impl std::fmt::Debug for PreviewCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreviewCache")
            .field("pages", &self.pages.entry_count())
            .finish()
    }
}

impl PreviewCache {
    /// A cache holding at most `mib` MiB of page images.
    pub fn new(mib: u64) -> Self {
        Self {
            pages: Cache::builder()
                .max_capacity(mib.saturating_mul(1024 * 1024).max(1))
                .weigher(|_, v: &Bytes| u32::try_from(v.len()).unwrap_or(u32::MAX))
                .build(),
            renders: Arc::new(Semaphore::new(RENDERS_AT_ONCE)),
        }
    }
}

/// `GET /cases/{id}/sources/{source}/pages/{page}` (1-based page): the page as PNG, turned
/// as its current reading turned it. 404 for anything not the user's tenant's.
pub(crate) async fn page_image(
    State(state): State<AppState>,
    Extension(cache): Extension<PreviewCache>,
    user: DeskUser,
    Path((id, source, page)): Path<(String, String, String)>,
) -> Result<Response, DeskError> {
    let case: CaseId = id.parse().map_err(|_| ApiError::not_found())?;
    let source: Uuid = source.parse().map_err(|_| ApiError::not_found())?;
    let page: u32 = page
        .parse()
        .ok()
        .filter(|p| *p >= 1)
        .ok_or_else(ApiError::not_found)?;
    let index = page - 1;
    let stored = state
        .store
        .page_source(
            user.0.principal.tenant_id,
            case,
            source,
            i32::try_from(index).map_err(|_| ApiError::not_found())?,
        )
        .await?
        .filter(|s| i64::from(index) < i64::from(s.pages))
        .ok_or_else(ApiError::not_found)?;
    let media: MediaType = stored
        .media_type
        .parse()
        .map_err(|_| ApiError::Internal(format!("stored media type {}", stored.media_type)))?;
    let path = state.blobs.local_path(&stored.blob_key).await?;
    let rotation = stored.rotation.rem_euclid(360);
    let previews = state.previews.clone();
    let renders = cache.renders.clone();
    let png = cache
        .pages
        .try_get_with((source, index, rotation), async move {
            let _permit = renders
                .acquire_owned()
                .await
                .map_err(|e| PreviewError::Unavailable(e.to_string()))?;
            tokio::task::spawn_blocking(move || {
                previews.preview(&path, media, index, rotation as u16, PREVIEW_MAX_SIDE)
            })
            .await
            .map_err(|e| PreviewError::Unavailable(e.to_string()))?
            .map(Bytes::from)
        })
        .await
        .map_err(|e: Arc<PreviewError>| match e.as_ref() {
            PreviewError::Unrenderable(m) => ApiError::client(
                StatusCode::UNPROCESSABLE_ENTITY,
                "page_unrenderable",
                format!("this page cannot be shown: {m}"),
            ),
            PreviewError::Unavailable(m) => ApiError::Internal(format!("page preview: {m}")),
        })?;
    let mut response = Body::from(png).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("image/png"));
    // A page of a tenant's document: kept by no cache, not even the browser's after sign-out
    // (the server's own cache makes showing it again cheap).
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}
