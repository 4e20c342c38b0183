//! The cluster key ([`ferry_core::s3::cluster`]): what nodes, proxies and `ferry rebalance`
//! share so that a node can tell the cluster's own requests from a client's.
//!
//! Read from a file (`--cluster-key FILE`, `cluster_key_file` in a proxy's TOML: one key of 64
//! hex digits a line, the first sealing, every one verifying; readable by its owner only) or
//! from the environment (`FERRY_CLUSTER_KEY`, the same text). `ferry cluster-key new FILE`
//! makes a file; the local cluster makes `DATA/cluster.key` on its first start.

use std::io;
use std::path::Path;

use ferry_core::s3::cluster::{ClusterKey, ClusterKeys};

use crate::store::read_key_file;
use crate::users::write_private;

/// The environment variable that holds the keys themselves (not a path).
pub const ENV: &str = "FERRY_CLUSTER_KEY";

/// The keys of `file`, if given, else of [`ENV`] in `env`, if set; `None` when neither is. A
/// file that others may read, or that holds no key, is refused with a message naming it (never
/// its text).
pub fn load(
    file: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> io::Result<Option<ClusterKeys>> {
    let invalid = |e: String| io::Error::new(io::ErrorKind::InvalidData, e);
    if let Some(path) = file {
        let what = "cluster key file";
        let text = read_key_file(path, what)?
            .ok_or_else(|| invalid(format!("{what} {}: no such file", path.display())))?;
        return ClusterKeys::parse(&text)
            .map(Some)
            .map_err(|e| invalid(format!("{what} {}: {e}", path.display())));
    }
    match env(ENV).map(zeroize::Zeroizing::new) {
        Some(text) => ClusterKeys::parse(&text)
            .map(Some)
            .map_err(|e| invalid(format!("{ENV}: {e}"))),
        None => Ok(None),
    }
}

/// A new key, from the system's random source.
pub fn generate() -> io::Result<ClusterKey> {
    let mut bytes = zeroize::Zeroizing::new([0u8; 32]);
    getrandom::fill(bytes.as_mut_slice()).map_err(io::Error::other)?;
    Ok(ClusterKey::from_bytes(*bytes))
}

/// Write a new key file at `path` (readable by its owner only; refused if it exists) and return
/// its key.
pub fn create(path: &Path) -> io::Result<ClusterKeys> {
    let key = generate()?;
    let mut text = zeroize::Zeroizing::new(Vec::with_capacity(160));
    text.extend_from_slice(
        b"# Ferry cluster key: the first line seals, every line verifies (ferry cluster-key).\n",
    );
    text.extend_from_slice(key.to_hex().as_slice());
    text.push(b'\n');
    write_private(path, &text)?;
    Ok(ClusterKeys::new(key))
}

/// The keys of `path`, the file made with a new key if it does not exist yet (the local
/// cluster's `DATA/cluster.key`).
pub fn load_or_create(path: &Path) -> io::Result<ClusterKeys> {
    match create(path) {
        Ok(keys) => Ok(keys),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            load(Some(path), &|_| None)?.ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    #[test]
    fn a_made_file_loads_and_an_open_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cluster.key");
        let made = load_or_create(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let again = load_or_create(&path).unwrap();
        assert_eq!(
            made.current().to_hex().as_slice(),
            again.current().to_hex().as_slice()
        );
        assert!(create(&path).is_err(), "an existing file is never replaced");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = load(Some(&path), &|_| None).unwrap_err().to_string();
        assert!(
            e.contains("cluster key file") && e.contains("too open"),
            "{e}"
        );
        let missing = dir.path().join("nothing");
        assert!(
            load(Some(&missing), &|_| None).is_err(),
            "a named file must exist"
        );
        // The environment's keys, when no file is named; a bad value is refused.
        let key = "5a".repeat(32);
        let env = |v: &'static str| move |n: &str| (n == ENV).then(|| v.to_owned());
        assert!(load(None, &|_| None).unwrap().is_none());
        let leaked: &'static str = Box::leak(key.into_boxed_str());
        assert!(load(None, &env(leaked)).unwrap().is_some());
        assert!(load(None, &env("nope")).is_err());
    }
}
