//! Who may read what the store writes: its owner only.
//!
//! A data directory holds objects in plaintext (unless encrypted), and its metadata holds
//! policies, ACLs, tags and wrapped data keys: no other local account has business reading
//! them. Under the usual umask (022) directories would be made 0755 and files 0644, so every
//! directory the store (and the node, for its data directory) creates is made 0700 and every
//! file 0600, the modes given at creation (a umask only ever takes bits away, never adds the
//! group's or others'). What a library creates itself — the redb database — is created here
//! first, empty and 0600, for redb to initialise (`Database::create` takes an empty file).
//!
//! What exists already is left as it is, with a warning at open when it is open to the group
//! or others: an operator may have given a group access on purpose (a backup account, a
//! monitoring agent), and a store that changed modes behind them would break that silently.

use std::fs::{self, DirBuilder, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::Path;

/// The mode of every directory the store makes.
pub(crate) const DIR_MODE: u32 = 0o700;
/// The mode of every file the store makes.
pub(crate) const FILE_MODE: u32 = 0o600;

/// Make `dir` and whatever parents it lacks, each 0700; nothing if it exists.
pub(crate) fn create_dir_all(dir: &Path) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(DIR_MODE).create(dir)
}

/// Make `dir` (0700), whose parent exists: `AlreadyExists` if it does.
pub(crate) fn create_dir(dir: &Path) -> io::Result<()> {
    DirBuilder::new().mode(DIR_MODE).create(dir)
}

/// `options` (for a new file) with the store's file mode.
pub(crate) fn private_file(options: &mut OpenOptions) -> &mut OpenOptions {
    options.mode(FILE_MODE)
}

/// Make `path` an empty 0600 file if nothing is there, for a library that would create it
/// with the default mode to open instead.
pub(crate) fn precreate_file(path: &Path) -> io::Result<()> {
    match private_file(OpenOptions::new().write(true).create_new(true)).open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// Warn (and change nothing: see the module's comment) when `path` exists and its group or
/// others have any access to it.
pub(crate) fn warn_if_shared(path: &Path) {
    let Ok(meta) = fs::metadata(path) else {
        return;
    };
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        tracing::warn!(
            path = %path.display(),
            mode = %format!("{mode:04o}"),
            "the store's {} is open to other local accounts (group or others have access); \
             it is left as it is: restrict it (chmod go-rwx) unless that access is meant",
            if meta.is_dir() { "directory" } else { "file" },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_made_is_the_owners_alone_and_what_exists_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let deep = dir.path().join("a/b/c");
        create_dir_all(&deep).unwrap();
        for p in ["a", "a/b", "a/b/c"] {
            assert_eq!(mode(&dir.path().join(p)), DIR_MODE, "{p}");
        }
        create_dir(&deep.join("d")).unwrap();
        assert_eq!(mode(&deep.join("d")), DIR_MODE);
        let file = deep.join("f");
        precreate_file(&file).unwrap();
        assert_eq!(mode(&file), FILE_MODE);
        assert_eq!(fs::metadata(&file).unwrap().len(), 0);
        // An existing file keeps its mode and its bytes.
        let shared = deep.join("shared");
        fs::write(&shared, b"kept").unwrap();
        fs::set_permissions(&shared, fs::Permissions::from_mode(0o640)).unwrap();
        precreate_file(&shared).unwrap();
        warn_if_shared(&shared);
        assert_eq!(mode(&shared), 0o640);
        assert_eq!(fs::read(&shared).unwrap(), b"kept");
    }
}
