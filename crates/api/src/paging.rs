//! The one keyset pagination of every listing, the API's and the desk's: `limit` and `cursor`
//! read from the query string (each mistake its own 400), one row more than asked fetched, and
//! a next page (`next_cursor`, the desk's Next link) only when another page exists — so the
//! last page says so instead of sending the client to an empty one.

use crate::error::ApiError;
use axum::extract::{FromRequestParts, Query};
use axum::http::request::Parts;
use chrono::{DateTime, Utc};
use ironclad_store::read::{decode_cursor, encode_cursor};
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

/// Page size when the client gives none.
pub const DEFAULT_PAGE_SIZE: i64 = 50;
/// Largest page a client may ask for; bigger asks are refused rather than silently cut, so a
/// client never mistakes a short page for the end.
pub const MAX_PAGE_SIZE: i64 = 500;

/// A listing's page (extractor): `limit` (1..=[`MAX_PAGE_SIZE`], default
/// [`DEFAULT_PAGE_SIZE`]) and `cursor` (a `next_cursor` this API issued). Other query
/// parameters are the listing's own business.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paging {
    /// Rows per page.
    pub limit: i64,
    /// Strictly after this (created_at, id), in the listing's order.
    pub after: Option<(DateTime<Utc>, Uuid)>,
}

#[derive(Debug, Deserialize)]
struct PagingParams {
    limit: Option<String>,
    cursor: Option<String>,
}

impl Paging {
    /// How many rows to fetch: one more than the page, to know whether another follows.
    pub fn fetch(&self) -> i64 {
        self.limit + 1
    }

    /// The page of `rows` (fetched with [`Paging::fetch`]) and its `next_cursor`: the last
    /// row's when more rows exist, else `None`.
    pub fn page<T>(
        &self,
        mut rows: Vec<T>,
        key: impl Fn(&T) -> (DateTime<Utc>, Uuid),
    ) -> (Vec<T>, Option<String>) {
        let limit = usize::try_from(self.limit).unwrap_or(usize::MAX);
        if rows.len() > limit {
            rows.truncate(limit);
            let next = rows.last().map(|r| {
                let (at, id) = key(r);
                encode_cursor(at, id)
            });
            (rows, next)
        } else {
            (rows, None)
        }
    }

    fn parse(params: PagingParams) -> Result<Self, ApiError> {
        let limit = match params.limit.as_deref() {
            None => DEFAULT_PAGE_SIZE,
            Some(raw) => raw
                .parse::<i64>()
                .ok()
                .filter(|n| (1..=MAX_PAGE_SIZE).contains(n))
                .ok_or_else(|| {
                    ApiError::bad_request(
                        "invalid_limit",
                        format!("limit must be an integer from 1 to {MAX_PAGE_SIZE}"),
                    )
                    .with_details(json!({"max": MAX_PAGE_SIZE}))
                })?,
        };
        let after = params
            .cursor
            .as_deref()
            .map(|c| {
                decode_cursor(c).ok_or_else(|| {
                    ApiError::bad_request("invalid_cursor", "cursor is not one this API issued")
                })
            })
            .transpose()?;
        Ok(Self { limit, after })
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Paging {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Query(params) = Query::<PagingParams>::from_request_parts(parts, state)
            .await
            .map_err(|_| {
                ApiError::bad_request("invalid_query", "the query string could not be parsed")
            })?;
        Self::parse(params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paging(limit: Option<&str>, cursor: Option<&str>) -> Result<Paging, ApiError> {
        Paging::parse(PagingParams {
            limit: limit.map(str::to_owned),
            cursor: cursor.map(str::to_owned),
        })
    }

    #[test]
    fn limits_and_cursors_are_checked_and_the_last_page_has_no_cursor() {
        let p = paging(None, None).expect("defaults");
        assert_eq!((p.limit, p.fetch(), p.after), (DEFAULT_PAGE_SIZE, 51, None));
        for bad in ["0", "501", "x", "-1"] {
            assert!(paging(Some(bad), None).is_err(), "{bad}");
        }
        assert!(paging(None, Some("garbage")).is_err());
        let at = DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default();
        let key = |n: &u128| (at, Uuid::from_u128(*n));
        let two = paging(Some("2"), None).expect("2");
        // Exactly a page: no next page.
        let (rows, next) = two.page(vec![1u128, 2], key);
        assert_eq!((rows, next), (vec![1, 2], None));
        // One more than a page: the cursor of the page's last row.
        let (rows, next) = two.page(vec![1u128, 2, 3], key);
        assert_eq!(rows, vec![1, 2]);
        let next = next.expect("a next page");
        assert_eq!(
            paging(None, Some(&next)).expect("reads back").after,
            Some(key(&2))
        );
    }
}
