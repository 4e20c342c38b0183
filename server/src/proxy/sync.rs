//! A backend's check before it takes traffic: the buckets the other backends have, and their
//! configuration, are made on it first.
//!
//! A backend starts *checking* (`Backend::is_checking`), and so does one that comes back after
//! it was down: it answers probes but takes no client traffic, which waits for it within the
//! retry window as for a restarting backend (then `503 SlowDown`). Its probe loop then runs
//! [`check`]: for every client key, the buckets listed by the other backends that answer; a
//! bucket it lacks is created with the key as its owner (with object lock if the bucket has
//! it), and each setting of a bucket that it lacks — versioning, object lock, default
//! encryption, policy, CORS, lifecycle, tagging, and the ACL of a bucket it just got — is
//! copied from the first other backend that has it. Only then does it take traffic
//! (`Backend::admit`): a write into a bucket with a default encryption never lands, stored
//! plaintext, on a backend that lacks the configuration. A check that fails (the backend
//! stopped answering, or refused a write) leaves the backend out until the next probe tries
//! again.
//!
//! Settings are only ever added: one the backend has is left as it is, even where it differs
//! from the others'. Every bucket write through the proxy needs every backend up, so backends
//! differ only after a backend was added (or restored from elsewhere), or after a write that
//! could not be undone everywhere (`buckets::relay_everywhere`).

use std::sync::Arc;

use ferry_core::rt::Runtime;
use ferry_core::s3::S3Result;
use ferry_core::s3::bucket_config::ConfigKind;
use ferry_core::s3::header;
use ferry_core::s3::xml::VersioningConfiguration;
use ferry_core::s3::xml::lock::ObjectLockConfiguration;

use super::Proxy;
use super::client::{Client, Setting};
use super::context::Caller;
use super::forward::Call;

/// The configurations a check copies, in the order it copies them: versioning before object
/// lock (which needs it), the default encryption, the public access block and the ownership
/// controls before anything that lets writes in.
const COPIED: [ConfigKind; 9] = [
    ConfigKind::Versioning,
    ConfigKind::ObjectLock,
    ConfigKind::Encryption,
    ConfigKind::PublicAccessBlock,
    ConfigKind::OwnershipControls,
    ConfigKind::Policy,
    ConfigKind::Cors,
    ConfigKind::Lifecycle,
    ConfigKind::Tagging,
];

/// Whether a backend's document of `kind` means it has all of it (nothing to copy): a
/// versioning document with a state (a bucket never versioned answers one without), an object
/// lock configuration with a default retention (a bucket made with object lock has one
/// without); any other document.
fn complete(kind: ConfigKind, doc: &[u8]) -> bool {
    match kind {
        ConfigKind::Versioning => VersioningConfiguration::status_of(doc).is_some(),
        ConfigKind::ObjectLock => has_retention(doc),
        _ => true,
    }
}

/// Whether another backend's document of `kind` (`source`) is copied over the backend's own
/// (`target`, `None` when it has none), which is not [`complete`].
fn wanted(kind: ConfigKind, target: Option<&[u8]>, source: &[u8]) -> bool {
    match kind {
        ConfigKind::Versioning => VersioningConfiguration::status_of(source).is_some(),
        ConfigKind::ObjectLock => target.is_none() || has_retention(source),
        _ => true,
    }
}

/// An object lock configuration with a default retention.
fn has_retention(doc: &[u8]) -> bool {
    ObjectLockConfiguration::parse_xml(doc).is_ok_and(|c| c.default_retention.is_some())
}

/// The document a Put of `kind` takes, from what a Get answered: unchanged, but for a
/// GetBucketVersioning answer, which goes as PutBucketVersioning's `<VersioningConfiguration>`
/// with its state only (some servers answer under another root, moto's
/// `GetBucketVersioningResponse`, which a Put refuses).
fn put_body(kind: ConfigKind, doc: Vec<u8>) -> Vec<u8> {
    let status = match kind {
        ConfigKind::Versioning => VersioningConfiguration::status_of(&doc),
        _ => None,
    };
    let Some(status) = status else {
        return doc;
    };
    let mut out = Vec::with_capacity(128);
    VersioningConfiguration {
        status,
        mfa_delete: None,
    }
    .write_xml(&mut out);
    out
}

/// Check backend `to` ([`check`]) and let it take traffic if the check passed; else it stays
/// out (logged) until the next probe runs this again.
pub(crate) async fn check_and_admit<R: Runtime>(p: &Arc<Proxy<R>>, to: usize) {
    let Some(b) = p.backends.get(to) else { return };
    match check(p, to).await {
        Ok(()) => b.admit(),
        Err(e) => tracing::warn!(
            backend = %b.id, error = %e,
            "backend answers but its buckets could not be brought up to date; it takes no \
             traffic until the next probe tries again"
        ),
    }
}

/// [`check`] of every backend in turn, each brought up to the others (before a reload swaps in
/// backends it adds, and before a rebalance moves keys to their owners); the first error, the
/// others having been tried all the same.
pub(crate) async fn check_all<R: Runtime>(p: &Arc<Proxy<R>>) -> S3Result<()> {
    let mut first = Ok(());
    for i in 0..p.backends.len() {
        if let Err(e) = check(p, i).await
            && first.is_ok()
        {
            first = Err(e);
        }
    }
    first
}

/// Bring backend `to`'s buckets and their settings up to those of the other backends that
/// answer (see the module comment). An error of `to`'s fails the check; another backend's is
/// logged and that backend skipped.
pub(crate) async fn check<R: Runtime>(p: &Arc<Proxy<R>>, to: usize) -> S3Result<()> {
    let others: Vec<usize> = (0..p.backends.len())
        .filter(|&i| {
            i != to
                && p.backends
                    .get(i)
                    .is_some_and(|b| b.is_up() || b.is_checking())
        })
        .collect();
    if others.is_empty() {
        return Ok(());
    }
    // Backends with keys of their own list the same buckets whoever asks: one key will do.
    let shared = std::iter::once(to)
        .chain(others.iter().copied())
        .any(|i| p.backends.get(i).is_some_and(|b| b.credentials.is_none()));
    let keys = if shared {
        &p.shared.client_keys[..]
    } else {
        p.shared.client_keys.get(..1).unwrap_or_default()
    };
    for key in keys {
        let caller = Caller::of_key(key);
        let client = Client::for_check(p, &caller, to);
        // The others at once: one that hangs costs a single I/O timeout.
        let listing: Vec<_> = others
            .iter()
            .map(|&i| {
                let (p2, caller) = (p.clone(), caller.clone());
                let listed = p.shared.rt.spawn(async move {
                    Client::for_check(&p2, &caller, to).list_buckets(i).await
                });
                (i, listed)
            })
            .collect();
        let mine = client.list_buckets(to).await?;
        let mut theirs: Vec<(usize, Vec<String>)> = Vec::with_capacity(others.len());
        for (i, listed) in listing {
            match listed.await {
                Ok(names) => theirs.push((i, names)),
                Err(e) => warn_skipped(p, i, "", &e.to_string()),
            }
        }
        let mut all: Vec<&String> = theirs.iter().flat_map(|(_, n)| n).collect();
        all.sort();
        all.dedup();
        for name in all {
            let holders: Vec<usize> = theirs
                .iter()
                .filter(|(_, n)| n.contains(name))
                .map(|(i, _)| *i)
                .collect();
            let created = !mine.contains(name);
            if created && !create_like(&client, name, &holders, to).await? {
                continue;
            }
            copy_settings(&client, name, &holders, to, created).await?;
        }
    }
    Ok(())
}

/// Create `bucket` on backend `to`, with object lock if the first of `holders` has it: whether
/// it is there now (a name another owner has on `to` is logged and skipped).
async fn create_like<R: Runtime>(
    client: &Client<'_, R>,
    bucket: &str,
    holders: &[usize],
    to: usize,
) -> S3Result<bool> {
    let p = client.proxy();
    let backend = p.backends.get(to).map_or("?", |b| b.id.as_str());
    let region = p
        .backends
        .get(to)
        .map_or("us-east-1", |b| b.region.as_str());
    let mut create = Call::create_bucket(bucket, region);
    let lock = ConfigKind::ObjectLock.subresource();
    if let Some(&from) = holders.first()
        && let Setting::Doc(..) = client.setting(from, bucket, lock).await
    {
        create.header(header::X_AMZ_BUCKET_OBJECT_LOCK_ENABLED, "true");
    }
    let reply = client.send(to, &create).await?;
    if reply.ok() || reply.error_code().as_deref() == Some("BucketAlreadyOwnedByYou") {
        tracing::info!(
            backend,
            bucket,
            "bucket created on a backend that lacked it"
        );
        return Ok(true);
    }
    if reply.error_code().as_deref() == Some("BucketAlreadyExists") {
        tracing::warn!(
            backend,
            bucket,
            "a backend has another owner's bucket of this name"
        );
        return Ok(false);
    }
    Err(reply.to_error())
}

/// Copy to backend `to` each setting of `bucket` it lacks from the first of `holders` that has
/// it, and the ACL of a bucket `created` just now.
async fn copy_settings<R: Runtime>(
    client: &Client<'_, R>,
    bucket: &str,
    holders: &[usize],
    to: usize,
    created: bool,
) -> S3Result<()> {
    let p = client.proxy();
    for kind in COPIED {
        let sub = kind.subresource();
        let target = match client.setting(to, bucket, sub).await {
            Setting::Doc(doc, _) if complete(kind, &doc) => continue,
            Setting::Doc(doc, _) => Some(doc),
            Setting::Absent => None,
            Setting::Unknown => {
                warn_skipped(p, to, bucket, &format!("its {sub} could not be read"));
                continue;
            }
        };
        for &from in holders {
            match client.setting(from, bucket, sub).await {
                Setting::Doc(doc, ct) if wanted(kind, target.as_deref(), &doc) => {
                    let doc = put_body(kind, doc);
                    let put = Call::put_setting(bucket, sub, &doc, ct.as_deref());
                    copy(client, to, &put, bucket).await?;
                    break;
                }
                Setting::Doc(..) | Setting::Absent => {}
                Setting::Unknown => {
                    warn_skipped(p, from, bucket, &format!("its {sub} could not be read"));
                }
            }
        }
    }
    let acl = ConfigKind::Acl.subresource();
    if created && let Some(&from) = holders.first() {
        match client.setting(from, bucket, acl).await {
            Setting::Doc(doc, ct) => {
                let put = Call::put_setting(bucket, acl, &doc, ct.as_deref());
                copy(client, to, &put, bucket).await?;
            }
            _ => warn_skipped(p, from, bucket, "its acl could not be read"),
        }
    }
    Ok(())
}

/// Send `put` (a setting of `bucket`) to backend `to`: its refusal fails the check.
async fn copy<R: Runtime>(
    client: &Client<'_, R>,
    to: usize,
    put: &Call,
    bucket: &str,
) -> S3Result<()> {
    let reply = client.send(to, put).await?;
    if !reply.ok() {
        return Err(reply.to_error());
    }
    let p = client.proxy();
    let backend = p.backends.get(to).map_or("?", |b| b.id.as_str());
    tracing::info!(
        backend,
        bucket,
        setting = %put.query,
        "bucket setting copied to a backend that lacked it"
    );
    Ok(())
}

fn warn_skipped<R: Runtime>(p: &Proxy<R>, i: usize, bucket: &str, why: &str) {
    let backend = p.backends.get(i).map_or("?", |b| b.id.as_str());
    tracing::warn!(backend, bucket, why, "skipped in a backend's check");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_check_copies() {
        let never = b"<VersioningConfiguration xmlns=\"x\"/>";
        let on = b"<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>";
        let v = ConfigKind::Versioning;
        assert!(!complete(v, never) && complete(v, on));
        assert!(wanted(v, Some(never), on) && !wanted(v, Some(never), never));
        // A lock without a default retention still turns lock on where it is missing; a
        // retention is copied over a lock without one.
        let bare = b"<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled>\
            </ObjectLockConfiguration>";
        let rule = b"<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled>\
            <Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>1</Days></DefaultRetention>\
            </Rule></ObjectLockConfiguration>";
        let l = ConfigKind::ObjectLock;
        assert!(!complete(l, bare) && complete(l, rule));
        assert!(wanted(l, None, bare) && wanted(l, Some(bare), rule));
        assert!(!wanted(l, Some(bare), bare));
        // The others: any document, where there is none.
        let e = ConfigKind::Encryption;
        assert!(complete(e, b"<x/>") && wanted(e, None, b"<x/>"));
        // Versioning before object lock, encryption before the rest.
        assert_eq!(
            &COPIED[..3],
            [
                ConfigKind::Versioning,
                ConfigKind::ObjectLock,
                ConfigKind::Encryption
            ]
        );
    }

    #[test]
    fn a_versioning_answer_is_put_as_a_configuration_whatever_its_root() {
        let put = |doc: &[u8]| put_body(ConfigKind::Versioning, doc.to_vec());
        let moto = b"<GetBucketVersioningResponse xmlns=\"x\"><Status>Suspended</Status>\
            </GetBucketVersioningResponse>";
        let body = put(moto);
        let parsed = VersioningConfiguration::parse_xml(&body).unwrap();
        assert_eq!(
            parsed.status,
            ferry_core::s3::version::Versioning::Suspended
        );
        assert!(wanted(ConfigKind::Versioning, None, moto));
        // A document without a state, and the other kinds' documents, go as they came.
        let none = b"<VersioningConfiguration/>";
        assert_eq!(put(none), none);
        let policy = br#"{"Version":"2012-10-17"}"#;
        assert_eq!(put_body(ConfigKind::Policy, policy.to_vec()), policy);
    }
}
