//! The request-state key file: the keys that seal and open the `requestState` of a call held
//! for approval (MCP 2026-07-28), kept across restarts so a state issued before one still opens
//! after it.
//!
//! One key per line, 64 or more hex digits (32 bytes or more); `#` starts a comment. The first
//! key seals, every key opens. The default file (`NAME.state-key` beside `NAME.toml`) is made on
//! first start with one fresh key, readable by its owner only; a file others can read is
//! refused. `state-key rotate` puts a new key first and keeps one previous key, so states sealed
//! in the 15 minutes before the rotation still open; the gateway reads the file when it starts.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::config::{Config, StateKeySource};

const HEADER: &str = "# toolgate-mcp-gateway request-state keys: the first seals, every one opens.\n\
# Keep this file as secret as the approval store. Rotate: toolgate-mcp-gateway state-key rotate.\n";

/// The default key file of the config at `config`: `NAME.state-key` beside `NAME.toml`.
pub fn path_for(config: &Path) -> PathBuf {
    let stem = config
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| "gateway".to_owned());
    config.with_file_name(format!("{stem}.state-key"))
}

/// The keys `config` names, first the one that seals; `None` when each start makes its own.
///
/// # Errors
///
/// What is wrong, naming the file, the line or the variable.
pub fn keys(config: &Config) -> Result<Option<Vec<Vec<u8>>>, String> {
    match &config.state_key {
        StateKeySource::PerProcess => Ok(None),
        StateKeySource::Env(name) => from_env(config, name).map(|key| Some(vec![key])),
        StateKeySource::File { path, create } => {
            // The config file, and the key naming the file (none names the default one).
            let within = |error: String| match create {
                true => format!(
                    "{}: the request-state key file made beside it: {error}",
                    config.file.display()
                ),
                false => format!("{}: gateway.state_key_file: {error}", config.file.display()),
            };
            if *create && !path.exists() {
                create_file(path).map_err(within)?;
            }
            read(path).map(Some).map_err(within)
        }
    }
}

/// Puts a fresh key first in `path` and keeps the one that sealed until now; older keys go.
///
/// # Errors
///
/// The file cannot be read, parsed or written.
pub fn rotate(path: &Path) -> Result<usize, String> {
    let keys = read(path)?;
    let fresh = fresh_key()?;
    let kept: Vec<String> = std::iter::once(fresh)
        .chain(keys.iter().take(1).map(|key| crate::hex::encode(key)))
        .collect();
    write_new(path, &kept, true)?;
    Ok(keys.len().saturating_sub(1))
}

/// The shared request-state key from the variable `name`: at least 32 bytes.
///
/// # Errors
///
/// The variable is unset or too short, naming the config key.
fn from_env(config: &Config, name: &str) -> Result<Vec<u8>, String> {
    let key = std::env::var(name).map_err(|_| {
        format!(
            "{}: gateway.state_key_env: the environment variable {name} is not set (or not UTF-8)",
            config.file.display()
        )
    })?;
    if key.len() < 32 {
        return Err(format!(
            "{}: gateway.state_key_env: ${name} holds {} bytes; it needs at least 32 (e.g. `openssl rand -hex 32`)",
            config.file.display(),
            key.len()
        ));
    }
    Ok(key.into_bytes())
}

fn read(path: &Path) -> Result<Vec<Vec<u8>>, String> {
    let named = |what: String| format!("{}: {what}", path.display());
    let metadata =
        std::fs::metadata(path).map_err(|error| named(format!("cannot read it: {error}")))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = metadata.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(named(format!(
                "is readable or writable by others (mode {mode:o}); `chmod 600` it: whoever reads it can forge approval states"
            )));
        }
    }
    #[cfg(not(unix))]
    let _ = metadata;
    let text = toolgate::files::read_text(path, crate::files::MAX_CONFIG_FILE_BYTES)
        .map_err(|error| named(format!("cannot read it: {error}")))?;
    let mut keys = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let key = unhex(line).ok_or_else(|| {
            named(format!(
                "line {}: not a key: a key is 64 or more hex digits (32 bytes or more)",
                index + 1
            ))
        })?;
        keys.push(key);
    }
    if keys.is_empty() {
        return Err(named("holds no key".to_owned()));
    }
    Ok(keys)
}

/// Makes the default key file. Instances started together race for it: each writes a whole file
/// under its own name and links it into place, so exactly one wins and none reads half a file.
fn create_file(path: &Path) -> Result<(), String> {
    let key = fresh_key()?;
    let mut tag = [0u8; 8];
    getrandom::fill(&mut tag).map_err(|error| format!("no randomness for a new key: {error}"))?;
    let own = path.with_extension(format!("state-key.{}", crate::hex::encode(&tag)));
    let _ = std::fs::remove_file(&own);
    write_new(&own, &[key], false)?;
    let linked = std::fs::hard_link(&own, path);
    let _ = std::fs::remove_file(&own);
    match linked {
        Ok(()) => {
            tracing::info!(file = %path.display(), "made a new request-state key file");
            Ok(())
        }
        // Another instance made it first: its key is the one to share.
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(format!("{}: cannot create it: {error}", path.display())),
    }
}

/// Writes `keys` to `path` with the header, owner-only; `replace`: through a temporary file
/// renamed over the old one, so a crash leaves the old file or the new one, never half of one.
fn write_new(path: &Path, keys: &[String], replace: bool) -> Result<(), String> {
    let named = |what: String| format!("{}: {what}", path.display());
    let target = if replace {
        path.with_extension("state-key.new")
    } else {
        path.to_owned()
    };
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    if replace {
        let _ = std::fs::remove_file(&target);
    }
    let mut file = options
        .open(&target)
        .map_err(|error| named(format!("cannot create it: {error}")))?;
    let text = format!("{HEADER}{}\n", keys.join("\n"));
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|error| named(format!("cannot write it: {error}")))?;
    if replace {
        std::fs::rename(&target, path)
            .map_err(|error| named(format!("cannot replace it: {error}")))?;
    }
    Ok(())
}

fn fresh_key() -> Result<String, String> {
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).map_err(|error| format!("no randomness for a new key: {error}"))?;
    Ok(crate::hex::encode(&key))
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    (text.len() >= 64)
        .then(|| crate::hex::decode(text))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("toolgate-state-key-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_made_file_holds_one_owner_only_key_and_rotation_keeps_one_previous() {
        let path = dir("made").join("g.state-key");
        create_file(&path).unwrap();
        let first = read(&path).unwrap();
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].len(), 32);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            assert_eq!(
                std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
        assert_eq!(rotate(&path).unwrap(), 0);
        let second = read(&path).unwrap();
        assert_eq!(second.len(), 2);
        assert_eq!(second[1], first[0]);
        assert_ne!(second[0], first[0]);
        assert_eq!(rotate(&path).unwrap(), 1, "the oldest key is dropped");
        let third = read(&path).unwrap();
        assert_eq!((third.len(), &third[1]), (2, &second[0]));
    }

    #[test]
    fn only_the_default_file_is_made_a_named_one_must_exist() {
        let path = dir("named").join("k");
        let mut config = crate::config::Config::legacy(PathBuf::new(), None, Vec::new());
        config.state_key = StateKeySource::File {
            path: path.clone(),
            create: false,
        };
        let error = keys(&config).unwrap_err();
        assert!(
            error.contains("gateway.state_key_file: ") && error.contains("cannot read it"),
            "{error}"
        );
        assert!(!path.exists());
        config.state_key = StateKeySource::File {
            path: path.clone(),
            create: true,
        };
        assert_eq!(keys(&config).unwrap().map(|keys| keys.len()), Some(1));
        assert!(path.exists());
    }

    #[test]
    fn instances_making_the_default_file_at_once_all_read_one_key() {
        let path = dir("race").join("g.state-key");
        let keys: Vec<Vec<Vec<u8>>> = std::thread::scope(|scope| {
            let makers: Vec<_> = (0..8)
                .map(|_| {
                    scope.spawn(|| {
                        if !path.exists() {
                            create_file(&path).unwrap();
                        }
                        read(&path).unwrap()
                    })
                })
                .collect();
            makers
                .into_iter()
                .map(|maker| maker.join().unwrap())
                .collect()
        });
        assert!(keys.iter().all(|read| read == &keys[0] && read.len() == 1));
    }

    #[test]
    fn short_odd_non_hex_empty_and_shared_files_are_refused_naming_the_line() {
        let path = dir("bad").join("g.state-key");
        for (text, expected) in [
            // Written after the two header lines.
            ("abcd\n", "line 3: not a key"),
            (&format!("# c\n{}\n", "a".repeat(65)), "line 4: not a key"),
            (&format!("{}\n", "g".repeat(64)), "line 3: not a key"),
            ("# only a comment\n\n", "holds no key"),
        ] {
            let _ = std::fs::remove_file(&path);
            write_new(&path, &[text.to_owned()], false).unwrap();
            let error = read(&path).unwrap_err();
            assert!(
                error.contains(expected) && error.contains("g.state-key"),
                "{error}"
            );
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let _ = std::fs::remove_file(&path);
            write_new(&path, &["a".repeat(64)], false).unwrap();
            assert_eq!(read(&path).unwrap().len(), 1);
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            let error = read(&path).unwrap_err();
            assert!(
                error.contains("mode 644") && error.contains("chmod 600"),
                "{error}"
            );
        }
    }
}
