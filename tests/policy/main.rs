//! Policies: the rule policy and its conditions, evasions of both, analysis, tool groups,
//! principals, reasons, layers and shadow mode, the name policy and the rule index, whether a
//! policy fits its registry, rate limits and flow rules (in memory, in SQLite and in PostgreSQL,
//! shared by real processes: those run this binary again, `--exact flows::child_process_role`
//! and `--exact rate_limits_shared::child_process_role`).

#[path = "../support/common.rs"]
mod common;
#[cfg(feature = "postgres")]
#[path = "../support/postgres.rs"]
mod postgres_support;

mod amount_evasions;
mod amounts;
mod analysis;
mod analysis_budget;
mod analysis_corpus;
mod analysis_fresh;
mod analysis_schemas;
mod analysis_spellings;
mod analysis_unlike;
mod catalogue_limits;
mod conditions;
mod evasions;
mod fits_registry;
mod flow_approvers;
mod flow_evasions;
mod flow_same;
mod flow_setup;
mod flows;
mod groups;
mod injection_catalogue;
mod ip_host_spellings;
mod layers;
mod listing;
mod lookups;
mod principals;
mod provenance;
mod provenance_bounds;
mod provenance_room;
mod rate_limit_evasions;
mod rate_limits;
mod rate_limits_shared;
mod reasons;
mod result_rules;
mod result_rules_whole;
mod return_path_review;
mod return_path_spellings;
mod rule_index;
mod rules;
mod shadow;
mod tool_policy;
mod vocabulary_paths;
