//! Private keys at rest: AES-256-GCM with a key from `[certificates] key_file`.
//!
//! A sealed value is `fy-aes256gcm:<key id>:<base64(nonce || ciphertext || tag)>`. The key id
//! (the first 8 bytes of the key's SHA-256, in hex) lets an operator see which key a value
//! needs; the associated data binds each value to its row, so a ciphertext copied onto
//! another row does not open.

use std::fmt;
use std::path::{Path, PathBuf};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use ring::rand::{SecureRandom, SystemRandom};

const PREFIX: &str = "fy-aes256gcm";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The key file cannot be used; the sentence names the file and the fix.
    #[error("{0}")]
    KeyFile(String),
    /// A sealed value does not open with this key.
    #[error("{0}")]
    Open(String),
    #[error("the system random generator failed")]
    Random,
}

/// The key that seals and opens private keys. Its bytes never leave this type.
pub struct KeyCipher {
    key: LessSafeKey,
    id: String,
    source: String,
}

impl fmt::Debug for KeyCipher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyCipher")
            .field("id", &self.id)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

fn key_id(key: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, key);
    digest.as_ref()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl KeyCipher {
    /// A cipher over 32 key bytes; `source` says where they came from (for messages).
    pub fn from_bytes(key: &[u8], source: impl Into<String>) -> Result<KeyCipher, KeyError> {
        let source = source.into();
        let unbound = UnboundKey::new(&AES_256_GCM, key).map_err(|_| {
            KeyError::KeyFile(format!(
                "{source}: the key must be 32 bytes (AES-256), base64-encoded"
            ))
        })?;
        Ok(KeyCipher {
            key: LessSafeKey::new(unbound),
            id: key_id(key),
            source,
        })
    }

    /// Reads a key file: 32 bytes, base64 (surrounding whitespace ignored).
    pub fn load(path: &Path) -> Result<KeyCipher, KeyError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            KeyError::KeyFile(format!(
                "[certificates] key_file: cannot read {shown}: {e} (create one with: head -c 32 /dev/urandom | base64 > {shown})"
            ))
        })?;
        let bytes = B64.decode(text.trim()).map_err(|_| {
            KeyError::KeyFile(format!(
                "[certificates] key_file: {shown} is not base64 (it must hold 32 random bytes, base64-encoded)"
            ))
        })?;
        if bytes.len() != 32 {
            return Err(KeyError::KeyFile(format!(
                "[certificates] key_file: {shown} holds {} bytes; AES-256 needs exactly 32",
                bytes.len()
            )));
        }
        Self::from_bytes(&bytes, shown)
    }

    /// Generates a new random key and writes it to `path` (mode 0600), refusing to
    /// overwrite an existing file.
    pub fn generate_file(path: &Path) -> Result<KeyCipher, KeyError> {
        let mut key = [0_u8; 32];
        SystemRandom::new()
            .fill(&mut key)
            .map_err(|_| KeyError::Random)?;
        let shown = path.display().to_string();
        let fail = |e: std::io::Error| {
            KeyError::KeyFile(format!(
                "[certificates] key_file: cannot create {shown}: {e}"
            ))
        };
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut file = options.open(path).map_err(fail)?;
        std::io::Write::write_all(&mut file, format!("{}\n", B64.encode(key)).as_bytes())
            .map_err(fail)?;
        file.sync_all().map_err(fail)?;
        Self::from_bytes(&key, shown)
    }

    /// The key's id (first 8 bytes of its SHA-256, hex): safe to log.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Where the key came from (a path), for messages.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Encrypts `plaintext`, bound to `aad` (the row it is stored in).
    pub fn seal(&self, plaintext: &[u8], aad: &str) -> Result<String, KeyError> {
        let mut nonce = [0_u8; NONCE_LEN];
        SystemRandom::new()
            .fill(&mut nonce)
            .map_err(|_| KeyError::Random)?;
        let mut buf = plaintext.to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad.as_bytes()),
                &mut buf,
            )
            .map_err(|_| KeyError::Random)?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&buf);
        Ok(format!("{PREFIX}:{}:{}", self.id, B64.encode(out)))
    }

    /// Decrypts a value sealed for `aad`; the error says exactly why it does not open.
    pub fn open(&self, sealed: &str, aad: &str) -> Result<String, KeyError> {
        let mut parts = sealed.splitn(3, ':');
        let (Some(PREFIX), Some(id), Some(data)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(KeyError::Open(
                "the stored private key is not in Fleetyard's encrypted form".into(),
            ));
        };
        if id != self.id {
            return Err(KeyError::Open(format!(
                "the stored private key was encrypted with key {id}, but [certificates] key_file ({}) holds key {}; restore the original key file",
                self.source, self.id
            )));
        }
        let raw = B64
            .decode(data)
            .map_err(|_| KeyError::Open("the stored private key is not valid base64".into()))?;
        if raw.len() < NONCE_LEN + AES_256_GCM.tag_len() {
            return Err(KeyError::Open("the stored private key is truncated".into()));
        }
        let (nonce, body) = raw.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce)
            .map_err(|_| KeyError::Open("the stored private key is truncated".into()))?;
        let mut body = body.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(aad.as_bytes()), &mut body)
            .map_err(|_| {
                KeyError::Open(format!(
                    "the stored private key does not authenticate with key {} ({}): it was altered or belongs to another row",
                    self.id, self.source
                ))
            })?;
        String::from_utf8(plain.to_vec())
            .map_err(|_| KeyError::Open("the decrypted private key is not text".into()))
    }
}

/// Where the embedded default keeps its key: beside the SQLite database file. `None` for
/// PostgreSQL and in-memory SQLite.
pub fn default_key_path(database_url: &str) -> Option<PathBuf> {
    let rest = database_url
        .strip_prefix("sqlite://")
        .or_else(|| database_url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or(rest);
    if path.is_empty() || path.contains(":memory:") {
        return None;
    }
    let dir = Path::new(path)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    Some(dir.join("certificates.key"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cipher(byte: u8) -> KeyCipher {
        KeyCipher::from_bytes(&[byte; 32], "test").expect("key")
    }

    #[test]
    fn sealed_values_open_with_the_same_key_and_row_only() {
        let c = cipher(1);
        let sealed = c
            .seal(b"-----BEGIN PRIVATE KEY-----", "row-1")
            .expect("seal");
        assert!(!sealed.contains("PRIVATE KEY"));
        assert_eq!(
            c.open(&sealed, "row-1").expect("open"),
            "-----BEGIN PRIVATE KEY-----"
        );
        let e = c.open(&sealed, "row-2").expect_err("other row");
        assert!(e.to_string().contains("another row"), "{e}");
        let e = cipher(2).open(&sealed, "row-1").expect_err("other key");
        assert!(
            e.to_string().contains("restore the original key file"),
            "{e}"
        );
    }

    #[test]
    fn two_seals_of_the_same_value_differ() {
        let c = cipher(3);
        assert_ne!(
            c.seal(b"x", "r").expect("seal"),
            c.seal(b"x", "r").expect("seal")
        );
    }

    #[test]
    fn key_files_are_generated_once_and_read_back() {
        let dir = std::env::temp_dir().join(format!("fy-key-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("k");
        let made = KeyCipher::generate_file(&path).expect("generate");
        let read = KeyCipher::load(&path).expect("load");
        assert_eq!(made.id(), read.id());
        assert!(KeyCipher::generate_file(&path).is_err(), "never overwrites");
        std::fs::write(&path, "c2hvcnQ=").expect("write");
        let e = KeyCipher::load(&path).expect_err("short key");
        assert!(e.to_string().contains("exactly 32"), "{e}");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn the_embedded_default_keeps_the_key_beside_the_database() {
        assert_eq!(
            default_key_path("sqlite:///var/lib/fy/fleetyard.sqlite?mode=rwc"),
            Some(PathBuf::from("/var/lib/fy/certificates.key"))
        );
        assert_eq!(
            default_key_path("sqlite://fleetyard.sqlite"),
            Some(PathBuf::from("certificates.key"))
        );
        assert_eq!(default_key_path("sqlite::memory:"), None);
        assert_eq!(default_key_path("postgres://x@h/db"), None);
    }
}
