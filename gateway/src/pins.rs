//! Tool pinning: the digest of every served tool's definition (name, description, input schema),
//! kept beside the config. A definition that differs from its pin — a description rewritten to
//! steer the model, a schema widened — is not served until an operator accepts it with
//! `toolgate-mcp-gateway pin`. An upstream with no pins yet is pinned as first seen.
//!
//! The pinned definitions are kept too: they stand in, held back, for a tool that changed or
//! vanished and for every tool of an upstream that did not start, so that a policy naming them
//! still loads and the rest is served (a call to a stand-in runs nothing).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rmcp::model::Tool;
use serde::{Deserialize, Serialize};

/// How a tool's definition stands against its pin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// It matches its pin, or pinning is off.
    Pinned,
    /// Its upstream has no pins yet: it will be pinned as first seen.
    FirstSeen,
    /// It differs from its pin.
    Changed { pinned: String },
    /// Its upstream is pinned but this tool was not in it.
    New,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    /// Upstream name → upstream tool name → definition digest.
    upstreams: BTreeMap<String, BTreeMap<String, String>>,
    /// Upstream name → upstream tool name → the definition as it was listed when pinned (absent
    /// from files written before definitions were kept).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    definitions: BTreeMap<String, BTreeMap<String, Tool>>,
}

/// The pins of one config.
#[derive(Debug, Default)]
pub struct Pins {
    path: Option<PathBuf>,
    file: File,
    // The file's text when last read or written, to notice `pin` rewriting it.
    text: Option<String>,
}

/// The pins file of the config at `config`: `gateway.toml` → `gateway.pins.json`.
pub fn path_for(config: &Path) -> PathBuf {
    let stem = config
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| "gateway".to_owned());
    config.with_file_name(format!("{stem}.pins.json"))
}

impl Pins {
    /// The pins of `config`, or none if it pins nothing.
    ///
    /// # Errors
    ///
    /// As [`load`](Self::load).
    pub fn of(config: &crate::config::Config) -> Result<Self, String> {
        config
            .pins
            .clone()
            .map_or_else(|| Ok(Self::off()), Self::load)
    }

    /// No pinning (the one-upstream command-line form).
    pub fn off() -> Self {
        Self::default()
    }

    /// The pins at `path`; none yet if the file does not exist.
    ///
    /// # Errors
    ///
    /// The file exists but cannot be read or is not a pins file.
    pub fn load(path: PathBuf) -> Result<Self, String> {
        let (file, text) =
            match toolgate::files::read_text(&path, crate::files::MAX_CONFIG_FILE_BYTES) {
                Ok(text) => (
                    serde_json::from_str(&text).map_err(|error| {
                        format!(
                            "{}: not a pins file ({error}); remove it to pin again",
                            path.display()
                        )
                    })?,
                    Some(text),
                ),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    (File::default(), None)
                }
                Err(error) => return Err(format!("{}: {error}", path.display())),
            };
        Ok(Self {
            path: Some(path),
            file,
            text,
        })
    }

    /// Reads the file again if another process (`pin`) rewrote it; whether it did. A file that
    /// does not load leaves the pins in force.
    pub fn reload_if_changed(&mut self) -> bool {
        let Some(path) = &self.path else {
            return false;
        };
        let Ok(text) = toolgate::files::read_text(path, crate::files::MAX_CONFIG_FILE_BYTES) else {
            return false;
        };
        if self.text.as_deref() == Some(text.as_str()) {
            return false;
        }
        match serde_json::from_str(&text) {
            Ok(file) => {
                self.file = file;
                self.text = Some(text);
                true
            }
            Err(error) => {
                tracing::warn!(pins = %path.display(), "pins not reloaded, those in force stay: {error}");
                self.text = Some(text);
                false
            }
        }
    }

    /// How `tool` of `upstream`, with definition `digest`, stands.
    pub fn judge(&self, upstream: &str, tool: &str, digest: &str) -> Verdict {
        if self.path.is_none() {
            return Verdict::Pinned;
        }
        match self.file.upstreams.get(upstream) {
            None => Verdict::FirstSeen,
            Some(tools) => match tools.get(tool) {
                Some(pinned) if pinned == digest => Verdict::Pinned,
                Some(pinned) => Verdict::Changed {
                    pinned: pinned.clone(),
                },
                None => Verdict::New,
            },
        }
    }

    /// Pins `tools` (definition as listed, digest) as `upstream`'s whole set.
    pub fn pin(&mut self, upstream: &str, tools: impl IntoIterator<Item = (Tool, String)>) {
        let (digests, definitions): (BTreeMap<_, _>, BTreeMap<_, _>) = tools
            .into_iter()
            .map(|(tool, digest)| {
                let name = tool.name.to_string();
                ((name.clone(), digest), (name, tool))
            })
            .unzip();
        self.file.upstreams.insert(upstream.to_owned(), digests);
        self.file
            .definitions
            .insert(upstream.to_owned(), definitions);
    }

    /// The definitions pinned for `upstream` with their digests; empty when none are kept.
    pub fn pinned(&self, upstream: &str) -> Vec<(Tool, String)> {
        let (Some(digests), Some(definitions)) = (
            self.file.upstreams.get(upstream),
            self.file.definitions.get(upstream),
        ) else {
            return Vec::new();
        };
        // A definition kept under another tool's name (a file edited by hand) is no pin.
        digests
            .iter()
            .filter_map(|(name, digest)| {
                definitions
                    .get(name)
                    .filter(|tool| tool.name == name.as_str())
                    .map(|tool| (tool.clone(), digest.clone()))
            })
            .collect()
    }

    /// Writes the pins (a temporary file renamed over the old one: a crash leaves one or the
    /// other whole).
    ///
    /// # Errors
    ///
    /// The file cannot be written.
    pub fn save(&mut self) -> Result<(), String> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let text = format!(
            "{}\n",
            serde_json::to_string_pretty(&self.file).expect("pins serialize")
        );
        let temporary = path.with_extension("json.tmp");
        std::fs::write(&temporary, &text)
            .and_then(|()| std::fs::rename(&temporary, path))
            .map_err(|error| format!("{}: cannot write the pins: {error}", path.display()))?;
        self.text = Some(text);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_or_new_tool_of_a_pinned_upstream_is_held_and_a_new_upstream_is_first_seen() {
        let dir = std::env::temp_dir().join(format!("toolgate-pins-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = path_for(&dir.join("gateway.toml"));
        assert_eq!(path, dir.join("gateway.pins.json"));
        let _ = std::fs::remove_file(&path);
        let mut pins = Pins::load(path.clone()).unwrap();
        assert_eq!(pins.judge("h", "echo", "sha256:a"), Verdict::FirstSeen);
        let echo = Tool::new("echo", "Echo.", serde_json::Map::new());
        pins.pin("h", [(echo.clone(), "sha256:a".to_owned())]);
        pins.save().unwrap();
        let pins = Pins::load(path.clone()).unwrap();
        assert_eq!(pins.judge("h", "echo", "sha256:a"), Verdict::Pinned);
        assert_eq!(pins.pinned("h"), [(echo, "sha256:a".to_owned())]);
        assert!(pins.pinned("other").is_empty());
        assert_eq!(
            pins.judge("h", "echo", "sha256:b"),
            Verdict::Changed {
                pinned: "sha256:a".to_owned()
            }
        );
        assert_eq!(pins.judge("h", "write", "sha256:c"), Verdict::New);
        assert_eq!(pins.judge("other", "x", "sha256:c"), Verdict::FirstSeen);
        assert_eq!(Pins::off().judge("h", "echo", "sha256:b"), Verdict::Pinned);
        std::fs::write(&path, "{\"upstreams\": 1}").unwrap();
        assert!(
            Pins::load(path.clone())
                .unwrap_err()
                .contains("not a pins file")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
