//! Users: who may sign requests, and who they are to S3 (canonical id, display name).
//!
//! A node and a proxy know the same users: the primary one (the key from `FERRY_ACCESS_KEY`,
//! `--credentials` or the data directory's generated file, as before users existed) and those
//! of a users file (`--users FILE`, TOML, written by `ferry user add NAME`):
//!
//! ```toml
//! [[user]]
//! name = "alice"                       # letters, digits, '.', '_', '-'; unique
//! access_key = "AKIA..."               # unique
//! secret_key = "..."
//! canonical_id = "64 hex digits"       # optional: hex SHA-256 of the access key
//! display_name = "alice"               # optional: the name
//! ```
//!
//! The primary user's canonical id is the hex SHA-256 of its access key, as it was when it was
//! the only user, so buckets created before users existed keep their owner.

use std::collections::HashMap;
use std::fs;
use std::io::{self, Write as _};
use std::path::Path;
use std::sync::Arc;

use ferry_core::s3::sigv4::{Hex64, MemoryCredentials, sha256};
use serde::Deserialize;

/// The primary user's name and display name.
pub const PRIMARY_NAME: &str = "ferry";

/// Longest user name.
const MAX_NAME: usize = 64;

/// One user.
#[derive(Clone, PartialEq, Eq)]
pub struct User {
    /// Its name in the users file (and in logs).
    pub name: String,
    /// The access key id it signs with.
    pub access_key: String,
    /// Its secret.
    pub secret_key: String,
    /// Its canonical user id (64 lower-case hex digits), in owners and grants.
    pub canonical_id: String,
    /// Its display name, in owners and grants.
    pub display_name: String,
}

impl std::fmt::Debug for User {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("User")
            .field("name", &self.name)
            .field("access_key", &self.access_key)
            .field("canonical_id", &self.canonical_id)
            .finish_non_exhaustive()
    }
}

impl User {
    /// A user whose canonical id is derived from its access key and whose display name is its
    /// name.
    pub fn new(
        name: impl Into<String>,
        access_key: impl Into<String>,
        secret_key: impl Into<String>,
    ) -> Self {
        let name = name.into();
        let access_key = access_key.into();
        Self {
            canonical_id: derived_id(&access_key),
            display_name: name.clone(),
            name,
            access_key,
            secret_key: secret_key.into(),
        }
    }

    /// The primary user of a node or proxy that signs with `access_key`.
    pub fn primary(access_key: impl Into<String>, secret_key: impl Into<String>) -> Self {
        Self::new(PRIMARY_NAME, access_key, secret_key)
    }
}

/// The canonical id of a user the file gives none: hex SHA-256 of its access key.
fn derived_id(access_key: &str) -> String {
    Hex64::of(&sha256(access_key.as_bytes()))
        .as_str()
        .to_owned()
}

/// The users a server knows, by access key and by canonical id.
#[derive(Debug, Clone)]
pub struct Users {
    primary: Arc<User>,
    by_key: HashMap<String, Arc<User>>,
    by_id: HashMap<String, Arc<User>>,
}

impl Users {
    /// The primary user and `others` (a user with the primary's access key replaces it).
    pub fn new(primary: User, others: &[User]) -> Result<Self, String> {
        let mut users = Self {
            primary: Arc::new(primary),
            by_key: HashMap::new(),
            by_id: HashMap::new(),
        };
        let primary = Arc::clone(&users.primary);
        let mut all = vec![primary];
        for u in others {
            if u.access_key == users.primary.access_key {
                users.primary = Arc::new(u.clone());
                all[0] = Arc::clone(&users.primary);
            } else {
                all.push(Arc::new(u.clone()));
            }
        }
        for u in all {
            if users.by_key.contains_key(&u.access_key) {
                return Err(format!("two users have the access key {:?}", u.access_key));
            }
            if let Some(other) = users.by_id.get(&u.canonical_id) {
                return Err(format!(
                    "users {:?} and {:?} have the same canonical id",
                    other.name, u.name
                ));
            }
            users.by_key.insert(u.access_key.clone(), Arc::clone(&u));
            users.by_id.insert(u.canonical_id.clone(), u);
        }
        Ok(users)
    }

    /// The primary user: owner of buckets that record none (created before users existed).
    pub fn primary(&self) -> &Arc<User> {
        &self.primary
    }

    /// The user signing with `access_key`.
    pub fn by_access_key(&self, access_key: &str) -> Option<&Arc<User>> {
        self.by_key.get(access_key)
    }

    /// The user with canonical id `id`.
    pub fn by_canonical_id(&self, id: &str) -> Option<&Arc<User>> {
        self.by_id.get(id)
    }

    /// Every user's key, for checking signatures.
    pub fn credentials(&self) -> MemoryCredentials {
        let mut c = MemoryCredentials::new();
        for u in self.by_key.values() {
            c.insert(&u.access_key, &u.secret_key);
        }
        c
    }

    /// How many users there are (the primary one included).
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    /// Never: there is always the primary user.
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// A users file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UsersFile {
    #[serde(default)]
    user: Vec<UserEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UserEntry {
    name: String,
    access_key: String,
    secret_key: String,
    canonical_id: Option<String>,
    display_name: Option<String>,
}

/// Parse a users file's text: every entry checked, names and access keys unique.
pub fn parse_users(text: &str) -> Result<Vec<User>, String> {
    let file: UsersFile = toml::from_str(text).map_err(|e| e.to_string())?;
    let mut users: Vec<User> = Vec::with_capacity(file.user.len());
    for e in file.user {
        check_name(&e.name)?;
        if e.access_key.is_empty() || e.secret_key.is_empty() {
            return Err(format!(
                "user {:?}: access_key and secret_key must not be empty",
                e.name
            ));
        }
        if e.access_key.contains([':', '/', ' ', ',', '=']) {
            return Err(format!(
                "user {:?}: the access key may not hold ':', '/', ',', '=' or spaces",
                e.name
            ));
        }
        let canonical_id = match e.canonical_id {
            Some(id) => {
                if id.len() != 64 || !id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
                    return Err(format!(
                        "user {:?}: canonical_id must be 64 lower-case hex digits",
                        e.name
                    ));
                }
                id
            }
            None => derived_id(&e.access_key),
        };
        if users.iter().any(|u| u.name == e.name) {
            return Err(format!("user {:?} is listed twice", e.name));
        }
        if users.iter().any(|u| u.access_key == e.access_key) {
            return Err(format!(
                "user {:?}: another user has the same access key",
                e.name
            ));
        }
        users.push(User {
            display_name: e.display_name.unwrap_or_else(|| e.name.clone()),
            name: e.name,
            access_key: e.access_key,
            secret_key: e.secret_key,
            canonical_id,
        });
    }
    Ok(users)
}

/// Read and parse the users file at `path`.
pub fn load_users(path: &Path) -> io::Result<Vec<User>> {
    let text = fs::read_to_string(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    parse_users(&text).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {e}", path.display()),
        )
    })
}

fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "user name {name:?}: 1 to {MAX_NAME} letters, digits, '.', '_' or '-'"
        ))
    }
}

/// `ferry user add NAME`: add a user with a generated key pair and canonical id to the users
/// file at `path` (created, readable by its owner only, if missing), and return it. The file is
/// replaced atomically; its other entries and comments are kept as they were.
pub fn add_user(path: &Path, name: &str) -> io::Result<User> {
    let invalid = |e: String| io::Error::new(io::ErrorKind::InvalidInput, e);
    check_name(name).map_err(invalid)?;
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    let existing = parse_users(&text).map_err(|e| invalid(format!("{}: {e}", path.display())))?;
    if existing.iter().any(|u| u.name == name) {
        return Err(invalid(format!(
            "{}: user {name:?} already exists",
            path.display()
        )));
    }
    let (access_key, secret_key) = generate_credentials()?;
    let mut id = [0u8; 32];
    getrandom::fill(&mut id).map_err(io::Error::other)?;
    let user = User {
        name: name.to_owned(),
        canonical_id: Hex64::of(&id).as_str().to_owned(),
        display_name: name.to_owned(),
        access_key,
        secret_key,
    };
    let mut out = text;
    if out.is_empty() {
        out.push_str("# Ferry users: `ferry node --users FILE` and `ferry proxy --users FILE`.\n");
    } else if !out.ends_with('\n') {
        out.push('\n');
    }
    // Every value is made of letters, digits, '+', '/', '.', '_' and '-': no TOML escapes.
    out.push_str(&format!(
        "\n[[user]]\nname = \"{}\"\naccess_key = \"{}\"\nsecret_key = \"{}\"\ncanonical_id = \"{}\"\n\
         display_name = \"{}\"\n",
        user.name, user.access_key, user.secret_key, user.canonical_id, user.display_name
    ));
    // Parse what is about to be written: a file this writes must load.
    parse_users(&out).map_err(|e| invalid(format!("{}: {e}", path.display())))?;
    let tmp = path.with_extension("tmp");
    let _ = fs::remove_file(&tmp);
    write_private(&tmp, out.as_bytes())?;
    fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::File::open(dir)?.sync_all()?;
    }
    let _ = io::stdout().flush();
    Ok(user)
}

/// A random access key (20 upper-case letters and digits, as AWS's look) and secret (40
/// letters and digits).
pub(crate) fn generate_credentials() -> io::Result<(String, String)> {
    const UPPER: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    const ANY: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut bytes = [0u8; 60];
    getrandom::fill(&mut bytes).map_err(io::Error::other)?;
    let (a, s) = bytes.split_at(20);
    // 32 and 64 symbols: a byte modulo either is uniform.
    let pick = |set: &[u8], b: &u8| char::from(set[usize::from(*b) % set.len()]);
    let access = a.iter().map(|b| pick(UPPER, b)).collect();
    let secret = s.iter().map(|b| pick(ANY, b)).collect();
    Ok((access, secret))
}

/// Create `path` readable by its owner only, and write `data` durably.
pub(crate) fn write_private(path: &Path, data: &[u8]) -> io::Result<()> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut f = options.open(path)?;
    f.write_all(data)?;
    f.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_parses_with_defaults_and_refuses_what_is_wrong() {
        let text = format!(
            "[[user]]\nname = \"alice\"\naccess_key = \"AK1\"\nsecret_key = \"s1\"\n\
             [[user]]\nname = \"bob\"\naccess_key = \"AK2\"\nsecret_key = \"s2\"\n\
             display_name = \"Bob B\"\ncanonical_id = \"{}\"\n",
            "ab".repeat(32)
        );
        let users = parse_users(&text).unwrap();
        assert_eq!(users[0].canonical_id, derived_id("AK1"));
        assert_eq!(users[0].display_name, "alice");
        assert_eq!(users[1].canonical_id, "ab".repeat(32));
        assert_eq!(users[1].display_name, "Bob B");
        for bad in [
            "[[user]]\nname = \"a b\"\naccess_key = \"AK\"\nsecret_key = \"s\"\n",
            "[[user]]\nname = \"a\"\naccess_key = \"\"\nsecret_key = \"s\"\n",
            "[[user]]\nname = \"a\"\naccess_key = \"AK\"\nsecret_key = \"s\"\ncanonical_id = \"x\"\n",
            "[[user]]\nname = \"a\"\naccess_key = \"AK\"\nsecret_key = \"s\"\nrole = \"admin\"\n",
            "[[user]]\nname = \"a\"\naccess_key = \"AK\"\nsecret_key = \"s\"\n\
             [[user]]\nname = \"a\"\naccess_key = \"AK2\"\nsecret_key = \"s\"\n",
            "[[user]]\nname = \"a\"\naccess_key = \"AK\"\nsecret_key = \"s\"\n\
             [[user]]\nname = \"b\"\naccess_key = \"AK\"\nsecret_key = \"s\"\n",
        ] {
            assert!(parse_users(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_primary_user_keeps_its_old_owner_id_and_can_be_named_in_the_file() {
        let p = User::primary("AKP", "sp");
        assert_eq!(p.canonical_id, derived_id("AKP"));
        let alice = User::new("alice", "AK1", "s1");
        let users = Users::new(p.clone(), std::slice::from_ref(&alice)).unwrap();
        assert_eq!(users.len(), 2);
        assert_eq!(users.primary().name, PRIMARY_NAME);
        assert_eq!(users.by_access_key("AK1").unwrap().name, "alice");
        assert_eq!(
            users.by_canonical_id(&alice.canonical_id).unwrap().name,
            "alice"
        );
        assert!(users.by_access_key("AKX").is_none());
        // The file may describe the primary user (its display name, say).
        let mut named = User::new("root", "AKP", "sp");
        named.display_name = "Root".into();
        let users = Users::new(p, &[named]).unwrap();
        assert_eq!(users.len(), 1);
        assert_eq!(users.primary().display_name, "Root");
    }

    #[test]
    fn add_user_appends_a_loadable_entry_and_refuses_a_second_of_the_same_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("users.toml");
        let a = add_user(&path, "alice").unwrap();
        let b = add_user(&path, "bob").unwrap();
        assert_ne!(a.access_key, b.access_key);
        assert_ne!(a.canonical_id, b.canonical_id);
        assert_eq!(a.access_key.len(), 20);
        assert_eq!(a.secret_key.len(), 40);
        let loaded = load_users(&path).unwrap();
        assert_eq!(loaded, vec![a, b]);
        assert!(add_user(&path, "alice").is_err());
        assert!(add_user(&path, "no spaces").is_err());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "mode {mode:o}");
        }
    }
}
