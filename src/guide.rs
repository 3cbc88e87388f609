// The guide: its chapters are the Markdown files in `docs/guide/`, included here so rustdoc renders
// them next to the API they link to and `cargo test` compiles and runs their samples. These modules
// hold no items, only documentation; `docs/guide/index.md` says how the guide is organised. Each
// chapter is preceded by `rustdoc-links.md`: the first definition of a link label wins in Markdown, so
// rustdoc resolves the guide's links to the API while GitHub reads each chapter's own definitions.
#![doc = include_str!("../docs/guide/rustdoc-links.md")]
#![doc = include_str!("../docs/guide/index.md")]

pub mod tools {
    #![doc = include_str!("../docs/guide/rustdoc-links.md")]
    #![doc = include_str!("../docs/guide/tools.md")]
}

pub mod rules {
    #![doc = include_str!("../docs/guide/rustdoc-links.md")]
    #![doc = include_str!("../docs/guide/rules.md")]
}

pub mod policies {
    #![doc = include_str!("../docs/guide/rustdoc-links.md")]
    #![doc = include_str!("../docs/guide/policies.md")]
}

pub mod limits {
    #![doc = include_str!("../docs/guide/rustdoc-links.md")]
    #![doc = include_str!("../docs/guide/limits.md")]
}

pub mod provenance {
    #![doc = include_str!("../docs/guide/rustdoc-links.md")]
    #![doc = include_str!("../docs/guide/provenance.md")]
}

pub mod approvals {
    #![doc = include_str!("../docs/guide/rustdoc-links.md")]
    #![doc = include_str!("../docs/guide/approvals.md")]
}

pub mod several_servers {
    #![doc = include_str!("../docs/guide/rustdoc-links.md")]
    #![doc = include_str!("../docs/guide/several-servers.md")]
}

pub mod providers {
    #![doc = include_str!("../docs/guide/rustdoc-links.md")]
    #![doc = include_str!("../docs/guide/providers.md")]
}

pub mod mcp {
    #![doc = include_str!("../docs/guide/rustdoc-links.md")]
    #![doc = include_str!("../docs/guide/mcp.md")]
}

pub mod gateway {
    #![doc = include_str!("../docs/guide/rustdoc-links.md")]
    #![doc = include_str!("../docs/guide/gateway.md")]
}

pub mod audit {
    #![doc = include_str!("../docs/guide/rustdoc-links.md")]
    #![doc = include_str!("../docs/guide/audit.md")]
}

pub mod threat_model {
    #![doc = include_str!("../docs/guide/rustdoc-links.md")]
    #![doc = include_str!("../docs/guide/threat-model.md")]
}

pub mod performance {
    #![doc = include_str!("../docs/guide/rustdoc-links.md")]
    #![doc = include_str!("../docs/guide/performance.md")]
}

pub mod testing {
    #![doc = include_str!("../docs/guide/rustdoc-links.md")]
    #![doc = include_str!("../docs/guide/testing.md")]

    pub mod mutation_scores {
        #![doc = include_str!("../docs/guide/rustdoc-links.md")]
        #![doc = include_str!("../docs/guide/mutation-scores.md")]
    }
}
