//! Served names: the name each upstream's tool is served under, and which upstream a served
//! name comes from.

use super::Config;

impl Config {
    /// The name `tool` of `upstream` is served under, when that name reads as that tool of that
    /// upstream and no other (see [`owner_of`](Self::owner_of) and
    /// [`reads_as_prefixed`](Self::reads_as_prefixed)); `None`: such a tool is not served.
    pub fn claimed_name(&self, upstream: &str, tool: &str) -> Option<String> {
        let served = self.served_name(upstream, tool);
        (self.owner_of(&served) == Some((upstream, tool))
            && !self.reads_as_prefixed(upstream, &served))
        .then_some(served)
    }

    /// The name `tool` of `upstream` is served under.
    pub fn served_name(&self, upstream: &str, tool: &str) -> String {
        match &self.separator {
            Some(separator) if !self.serves_own_names(upstream) => {
                format!("{upstream}{separator}{tool}")
            }
            _ => tool.to_owned(),
        }
    }

    /// Whether `upstream`'s tools are served under their own names.
    pub fn serves_own_names(&self, upstream: &str) -> bool {
        self.upstreams
            .iter()
            .any(|up| up.own_names && up.name == upstream)
    }

    /// Whether `served`, a name `upstream` serves under its own names, reads as a prefixed
    /// upstream's in any case (`B__echo` beside upstream `b`): such a tool is left out.
    pub fn reads_as_prefixed(&self, upstream: &str, served: &str) -> bool {
        let Some(separator) = &self.separator else {
            return false;
        };
        self.serves_own_names(upstream)
            && self.upstreams.iter().filter(|up| !up.own_names).any(|up| {
                served
                    .to_lowercase()
                    .starts_with(&format!("{}{separator}", up.name).to_lowercase())
            })
    }

    /// The upstream and its tool's own name a served name comes from: the upstream whose prefix
    /// it carries, else the one serving its own names (or the one upstream of the command-line
    /// form); `None` when no upstream can serve it.
    pub fn owner_of<'a>(&'a self, served: &'a str) -> Option<(&'a str, &'a str)> {
        if let Some(separator) = &self.separator {
            // The longest upstream name that fits: `x___y` is upstream `x_`'s `y`, not `x`'s `_y`.
            let prefixed = self
                .upstreams
                .iter()
                .filter(|up| !up.own_names)
                .filter_map(|up| {
                    served
                        .strip_prefix(up.name.as_str())?
                        .strip_prefix(separator.as_str())
                        .map(|tool| (up.name.as_str(), tool))
                })
                .max_by_key(|(upstream, _)| upstream.len());
            if prefixed.is_some() {
                return prefixed;
            }
        }
        match (&self.separator, self.upstreams.as_slice()) {
            (None, [only]) => Some((only.name.as_str(), served)),
            _ => self
                .upstreams
                .iter()
                .find(|up| up.own_names)
                .map(|up| (up.name.as_str(), served)),
        }
    }
}
