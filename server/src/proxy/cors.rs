//! CORS through the proxy. PutBucketCors and DeleteBucketCors fan out to every backend
//! (`buckets::put_everywhere`: the configuration is checked first, so a bad one changes
//! nothing anywhere); GetBucketCors is read from any backend.
//!
//! Preflights and the CORS headers of answers are the front's, as on a node; the proxy gives
//! it each bucket's rules from a small cache of its own, filled from a backend (GetBucketCors,
//! signed with the proxy's first key or the backend's own). Proxies share no state: a change
//! made through one proxy is seen by the others within [`CORS_CACHE_TTL`] (at once by the
//! proxy it went through, which forgets its entry). The cache holds at most
//! [`CORS_CACHE_ENTRIES`] buckets; a missing bucket is remembered as such for the same time,
//! so a flood of anonymous preflights costs a backend one request per bucket and lifetime.
//! Answers relayed from a backend lose the backend's own `Access-Control-*` and `Vary`
//! headers (`forward::relay`): the front's are the answer's, on relayed answers and on the
//! proxy's own errors alike.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use ferry_core::rt::Runtime;
use ferry_core::s3::bucket_config::ConfigKind;
use ferry_core::s3::xml::CorsConfiguration;
use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};

use super::Proxy;
use super::client::Client;
use super::context::Caller;
use super::forward::Call;

/// How long the proxy keeps a bucket's CORS rules (or their absence).
pub(crate) const CORS_CACHE_TTL: Duration = Duration::from_secs(5);
/// The most buckets whose rules the proxy keeps.
pub(crate) const CORS_CACHE_ENTRIES: usize = 1024;

/// What the proxy knows of a bucket's CORS rules.
#[derive(Debug, Clone)]
enum Known {
    /// The bucket does not exist (or its name is invalid).
    NoBucket,
    /// Its rules, or `None`.
    Rules(Option<Arc<CorsConfiguration>>),
}

/// Buckets' CORS rules, each for [`CORS_CACHE_TTL`], [`CORS_CACHE_ENTRIES`] at most.
#[derive(Debug, Default)]
pub(crate) struct CorsCache {
    entries: Mutex<HashMap<String, (Instant, Known)>>,
}

impl CorsCache {
    fn get(&self, bucket: &str) -> Option<Known> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries
            .get(bucket)
            .filter(|(at, _)| at.elapsed() < CORS_CACHE_TTL)
            .map(|(_, k)| k.clone())
    }

    fn put(&self, bucket: &str, known: Known) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= CORS_CACHE_ENTRIES && !entries.contains_key(bucket) {
            entries.retain(|_, (at, _)| at.elapsed() < CORS_CACHE_TTL);
            if entries.len() >= CORS_CACHE_ENTRIES {
                let oldest = entries
                    .iter()
                    .min_by_key(|(_, (at, _))| *at)
                    .map(|(b, _)| b.clone());
                if let Some(b) = oldest {
                    entries.remove(&b);
                }
            }
        }
        entries.insert(bucket.to_owned(), (Instant::now(), known));
    }

    /// Forget `bucket` (its rules changed through this proxy).
    pub(crate) fn forget(&self, bucket: &str) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.remove(bucket);
    }
}

/// `bucket`'s CORS rules, from the cache or a backend: `NoSuchBucket` when there is no such
/// bucket, a backend's failure (not cached) otherwise.
pub(crate) async fn bucket_cors<R: Runtime>(
    p: &Arc<Proxy<R>>,
    bucket: &str,
) -> S3Result<Option<Arc<CorsConfiguration>>> {
    let known = match p.shared.cors.get(bucket) {
        Some(k) => k,
        None => {
            let k = fetch(p, bucket).await?;
            p.shared.cors.put(bucket, k.clone());
            k
        }
    };
    match known {
        Known::NoBucket => Err(S3Error::new(S3ErrorCode::NoSuchBucket)),
        Known::Rules(r) => Ok(r),
    }
}

/// GetBucketCors from the first healthy backend that answers.
async fn fetch<R: Runtime>(p: &Arc<Proxy<R>>, bucket: &str) -> S3Result<Known> {
    let get = Call::get_setting(bucket, ConfigKind::Cors.subresource());
    let own = Caller::of_key(&p.shared.own_key);
    let client = Client::new(p, &own);
    let mut tried = Vec::new();
    let mut idx = p.any_healthy(bucket)?;
    let reply = loop {
        match client.send(idx, &get).await {
            Err(e) if e.is_unavailable() => {
                tried.push(idx);
                idx = p.any_healthy_but(bucket, &tried).map_err(|_| e)?;
            }
            other => break other?,
        }
    };
    if reply.ok() {
        // A backend's document we cannot read is the backend's fault, not the client's.
        let config = CorsConfiguration::parse_xml(&reply.body).map_err(|e| {
            S3Error::with_message(
                S3ErrorCode::InternalError,
                format!("backend's CORS configuration: {}", e.message),
            )
        })?;
        return Ok(Known::Rules(Some(Arc::new(config))));
    }
    match reply.error_code().as_deref() {
        Some("NoSuchCORSConfiguration") => Ok(Known::Rules(None)),
        Some("NoSuchBucket" | "InvalidBucketName") => Ok(Known::NoBucket),
        _ => Err(reply.to_error()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_is_bounded_and_forgets() {
        let cache = CorsCache::default();
        for i in 0..CORS_CACHE_ENTRIES + 10 {
            cache.put(&format!("b{i}"), Known::NoBucket);
        }
        let len = cache.entries.lock().map(|e| e.len()).unwrap_or(0);
        assert_eq!(len, CORS_CACHE_ENTRIES);
        let last = format!("b{}", CORS_CACHE_ENTRIES + 9);
        assert!(matches!(cache.get(&last), Some(Known::NoBucket)));
        cache.forget(&last);
        assert!(cache.get(&last).is_none());
        cache.put("x", Known::Rules(None));
        assert!(matches!(cache.get("x"), Some(Known::Rules(None))));
    }
}
