//! Directories read against what the person asked (`sources.lookups`): the person says "Ana",
//! the trusted directory's line `ana.silva - Ana Silva` makes `ana.silva` named by the person,
//! and a message to anyone else is asked — in memory, in SQLite and in PostgreSQL; what does not
//! name (a directory read before the request, an untrusted tool, common words, lowercase
//! words), layers, and the analysis.
#![cfg(all(feature = "sqlite", feature = "postgres", feature = "unicode", unix))]

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolgate::limits::{
    MemoryRateCounters, PostgresRateCounters, RateCounters, SqliteRateCounters,
};
use toolgate::policy::Layers;
use toolgate::provenance::ProvenanceKey;
use toolgate::rules::analysis::{self, Analysed, ToolDiff};
use toolgate::*;

use crate::flow_setup::{outcome_word, schema_of, scratch};
use crate::postgres_support;

const DIRECTORY: &str = "priya.nair - Priya Nair, Backend lead\n\
     ana.silva - Ana Silva, Product designer\n\
     jonas.weber - Jonas Weber, Frontend engineer\n\
     the.boss - The Boss\n\
     marco.bianchi - Marco Bianchi, Release manager\n\
     hannah.cole - Hannah Cole, Engineering manager";

fn policy(lookups: &str) -> String {
    format!(
        r#"{{
  "rules": [{{"id": "all", "tool": "*", "action": "allow", "reason": "the flows decide"}}],
  "sources": {{"trusted": ["list_users", "list_guests", "list_people"], "lookups": {lookups}}},
  "flows": [
    {{"id": "dm-not-named", "tool": "dm", "action": "ask",
     "reason": "a user you did not name",
     "provenance": {{"pointer": "/user", "not_seen_in": ["person"]}}}}
  ]
}}"#
    )
}

/// A tool returning the text `result` holds now.
fn returning(name: &str, result: &Arc<Mutex<String>>) -> ToolDefinition {
    returning_with(name, json!({"type": "object"}), result)
}

fn returning_with(name: &str, schema: Value, result: &Arc<Mutex<String>>) -> ToolDefinition {
    let result = Arc::clone(result);
    ToolDefinition::new(
        ToolSpec::new(name, "Returns what the test put there.", schema),
        move |_: &Value| -> Result<String, ToolError> { Ok(result.lock().unwrap().clone()) },
    )
    .unwrap()
}

/// A tool returning `people` as structured content.
fn listing_people(people: Value) -> ToolDefinition {
    let spec = ToolSpec::new("list_people", "The people.", json!({"type": "object"}))
        .with_output_schema(json!({"type": "object"}));
    ToolDefinition::structured(spec, move |_: &Value| -> Result<Value, ToolError> {
        Ok(people.clone())
    })
    .unwrap()
}

struct World {
    controller: ToolController,
}

fn world(counters: impl RateCounters + 'static, lookups: &str) -> World {
    let users = Arc::new(Mutex::new(DIRECTORY.to_owned()));
    let done = Arc::new(Mutex::new("sent".to_owned()));
    let registry = ToolRegistry::new([
        listing_people(json!({"users": [
            {"handle": "alice", "name": "Alice Chen"},
            {"handle": "bob", "name": "Bob Diaz"},
        ]})),
        returning("list_users", &users),
        returning("list_guests", &users),
        returning("read_channel", &users),
        returning_with(
            "dm",
            schema_of(json!({"user": {"type": "string"}, "body": {"type": "string"}})),
            &done,
        ),
    ])
    .unwrap();
    let policy = RulePolicy::from_json(&policy(lookups), &registry)
        .unwrap_or_else(|error| panic!("{error}"));
    let controller = ToolController::try_new(registry, policy)
        .unwrap()
        .with_rate_counters(counters)
        .with_provenance_key(ProvenanceKey::new([7; 32]));
    World { controller }
}

/// A world in memory and one in a SQLite file of its own.
fn worlds(name: &str, lookups: &str) -> Vec<World> {
    static MADE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let made = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = scratch(&format!("lookups-{name}-{made}"));
    vec![
        world(MemoryRateCounters::default(), lookups),
        world(SqliteRateCounters::open(&path, "s-1").unwrap(), lookups),
    ]
}

fn ask_person(world: &World, text: &str) {
    world.controller.record_person_request(None, text).unwrap();
}

fn read(world: &World, tool: &str) {
    let read = world
        .controller
        .handle(ToolCall::new("read-1", tool, json!({})));
    assert_eq!(outcome_word(read), "allow");
}

fn dm(world: &World, user: &str) -> &'static str {
    outcome_word(world.controller.handle(ToolCall::new(
        "c",
        "dm",
        json!({"user": user, "body": "hello"}),
    )))
}

const LOOKUPS: &str = r#"["list_users", "list_people"]"#;

/// The directory's line holding the name the person said names its handle; every other
/// colleague in the same directory is asked.
fn names_who_the_person_named(world: &World) {
    ask_person(
        world,
        "Collect the feedback on Ana's checkout mockups and DM it to her.",
    );
    read(world, "list_users");
    assert_eq!(dm(world, "ana.silva"), "allow");
    assert_eq!(dm(world, "ANA.SILVA"), "allow");
    for other in ["jonas.weber", "priya.nair", "marco.bianchi"] {
        assert_eq!(dm(world, other), "ask", "{other}");
    }
}

#[test]
fn a_name_the_person_said_picks_its_line_of_a_trusted_directory() {
    for world in worlds("picks", LOOKUPS) {
        names_who_the_person_named(&world);
    }
}

#[test]
fn the_same_holds_in_postgres_shared_by_two_controllers() {
    let Some(base) = postgres_support::server_url() else {
        return;
    };
    let db = postgres_support::Db::new(&base, "lookups");
    let url = db.url("lookups");
    let first = world(PostgresRateCounters::connect(&url, "s").unwrap(), LOOKUPS);
    names_who_the_person_named(&first);
    // A second controller on the same session and key reads the first one's records.
    let second = world(PostgresRateCounters::connect(&url, "s").unwrap(), LOOKUPS);
    assert_eq!(dm(&second, "ana.silva"), "allow");
    assert_eq!(dm(&second, "jonas.weber"), "ask");
}

/// A description names too: "the release manager" picks the line that says so.
#[test]
fn any_name_on_the_line_picks_it_whatever_its_case_in_the_request() {
    for world in worlds("description", LOOKUPS) {
        ask_person(&world, "Tell the release manager the build is green.");
        read(&world, "list_users");
        assert_eq!(dm(&world, "marco.bianchi"), "allow");
        assert_eq!(dm(&world, "ana.silva"), "ask");
    }
}

/// Common words and short ones pick nothing ("the" is in the request and on `the.boss`'s line),
/// nor does a word two lines share: "the manager" is Marco or Hannah, so neither.
#[test]
fn common_short_and_shared_words_pick_nothing() {
    for world in worlds("common", LOOKUPS) {
        ask_person(&world, "Please send the notes to me.");
        read(&world, "list_users");
        assert_eq!(dm(&world, "the.boss"), "ask");
    }
    for world in worlds("shared", LOOKUPS) {
        ask_person(&world, "Tell the manager the build is green.");
        read(&world, "list_users");
        assert_eq!(dm(&world, "marco.bianchi"), "ask");
        assert_eq!(dm(&world, "hannah.cole"), "ask");
    }
    for world in worlds("lowercase", LOOKUPS) {
        ask_person(&world, "Ask the frontend engineer and the boss.");
        read(&world, "list_users");
        assert_eq!(dm(&world, "jonas.weber"), "allow");
        assert_eq!(dm(&world, "the.boss"), "allow");
        assert_eq!(dm(&world, "priya.nair"), "ask");
    }
}

/// The request comes first: a directory read before the person named anyone names no one, and
/// neither does a directory the policy does not list.
#[test]
fn only_a_trusted_listed_directory_read_after_the_request_names() {
    for world in worlds("before", LOOKUPS) {
        read(&world, "list_users");
        ask_person(&world, "DM Ana the notes.");
        assert_eq!(dm(&world, "ana.silva"), "ask");
    }
    for world in worlds("unlisted", LOOKUPS) {
        ask_person(&world, "DM Ana the notes.");
        read(&world, "list_guests");
        assert_eq!(dm(&world, "ana.silva"), "ask");
    }
}

/// A tool `lookups` names that the policy does not trust is refused at load: a directory names
/// values for the person.
#[test]
fn a_directory_the_policy_does_not_trust_is_refused_at_load() {
    let users = Arc::new(Mutex::new(String::new()));
    let registry = ToolRegistry::new([
        returning("list_users", &users),
        returning("read_channel", &users),
        returning_with("dm", schema_of(json!({"user": {"type": "string"}})), &users),
    ])
    .unwrap();
    for lookups in [r#"["read_channel"]"#, r#"["*"]"#] {
        let error = RulePolicy::from_json(&policy(lookups), &registry)
            .err()
            .unwrap_or_else(|| panic!("{lookups} loaded"))
            .to_string();
        assert!(
            error.contains("sources.lookups[0]") && error.contains(r#"tool "read_channel""#),
            "{error}"
        );
    }
    RulePolicy::from_json(&policy(r#"["list_*"]"#), &registry).unwrap();
}

/// One result's names are read up to 4,096: a name past them (here on the last of 300 lines of
/// 16 names each) names nothing, one before them does.
#[test]
fn names_past_the_four_thousand_ninety_sixth_name_the_person_said_name_nothing() {
    let lines: Vec<String> = (0..300)
        .map(|line| {
            let names: Vec<String> = (0..16).map(|at| format!("N{line}x{at}q")).collect();
            format!("user{line} - {}", names.join(" "))
        })
        .collect();
    let users = Arc::new(Mutex::new(lines.join("\n")));
    let done = Arc::new(Mutex::new("sent".to_owned()));
    let registry = ToolRegistry::new([
        returning("list_users", &users),
        returning_with(
            "dm",
            schema_of(json!({"user": {"type": "string"}, "body": {"type": "string"}})),
            &done,
        ),
    ])
    .unwrap();
    let policy = RulePolicy::from_json(&policy(LOOKUPS), &registry).unwrap();
    let world = World {
        controller: ToolController::try_new(registry, policy)
            .unwrap()
            .with_provenance_key(ProvenanceKey::new([7; 32])),
    };
    // Line 255's names are the 4,081st to 4,096th; line 256's come after.
    ask_person(&world, "Ask N255x0q and N256x0q.");
    read(&world, "list_users");
    assert_eq!(dm(&world, "user255"), "allow");
    assert_eq!(dm(&world, "user256"), "ask");
}

/// Reading a directory only looks: its names are not the person's words afterwards, so reading
/// it again names no one more.
#[test]
fn reading_a_directory_again_names_no_one_more() {
    for world in worlds("again", LOOKUPS) {
        ask_person(&world, "DM Priya the notes.");
        read(&world, "list_users");
        read(&world, "list_users");
        assert_eq!(dm(&world, "priya.nair"), "allow");
        for other in ["ana.silva", "jonas.weber", "marco.bianchi", "hannah.cole"] {
            assert_eq!(dm(&world, other), "ask", "{other}");
        }
    }
}

/// In structured content each element of a list is a record: its strings together.
#[test]
fn each_element_of_a_list_in_structured_content_is_a_record() {
    for world in worlds("structured", LOOKUPS) {
        ask_person(&world, "Ask Bob about the demo.");
        read(&world, "list_people");
        assert_eq!(dm(&world, "bob"), "allow");
        assert_eq!(dm(&world, "alice"), "ask");
    }
}

/// Two layers: a directory is read against the person's words only where every layer that
/// classifies tools lists it.
#[test]
fn in_a_stack_every_classifying_layer_must_list_the_directory() {
    let users = Arc::new(Mutex::new(DIRECTORY.to_owned()));
    let done = Arc::new(Mutex::new("sent".to_owned()));
    let registry = || {
        ToolRegistry::new([
            returning("list_users", &users),
            returning_with(
                "dm",
                schema_of(json!({"user": {"type": "string"}, "body": {"type": "string"}})),
                &done,
            ),
        ])
        .unwrap()
    };
    for (second, named) in [(LOOKUPS, "allow"), ("[]", "ask")] {
        let layers = Layers::new()
            .layer(
                "base",
                RulePolicy::from_json(&policy(LOOKUPS), &registry()).unwrap(),
            )
            .unwrap()
            .layer(
                "team",
                RulePolicy::from_json(&policy(second), &registry()).unwrap(),
            )
            .unwrap();
        let controller = ToolController::try_new(registry(), layers)
            .unwrap()
            .with_provenance_key(ProvenanceKey::new([7; 32]));
        controller
            .record_person_request(None, "DM Ana the notes.")
            .unwrap();
        let read = controller.handle(ToolCall::new("r", "list_users", json!({})));
        assert_eq!(outcome_word(read), "allow");
        let sent = controller.handle(ToolCall::new(
            "c",
            "dm",
            json!({"user": "ana.silva", "body": "notes"}),
        ));
        assert_eq!(outcome_word(sent), named, "second layer lookups {second}");
    }
}

/// Policies that differ only in their lookups are never the same to the analysis.
#[test]
fn the_analysis_tells_policies_apart_by_their_lookups() {
    let users = Arc::new(Mutex::new(String::new()));
    let registry = ToolRegistry::new([
        returning("list_users", &users),
        returning_with("dm", schema_of(json!({"user": {"type": "string"}})), &users),
    ])
    .unwrap();
    let load = |text: &str| Analysed::policy(RulePolicy::from_json(text, &registry).unwrap());
    let diffs = analysis::diff(&load(&policy("[]")), &load(&policy(LOOKUPS)), &registry);
    let dm = diffs.iter().find(|diff| diff.tool() == "dm").unwrap();
    assert!(!matches!(dm, ToolDiff::Same { .. }), "{dm:?}");
}

/// One result names at most 64 records: past them the rest stay unnamed (asked), which keeps
/// reading a directory to a few round trips to the store however many names the person said.
#[test]
fn one_directory_names_at_most_sixty_four_records() {
    let lines: Vec<String> = (0..100)
        .map(|at| format!("user{at} - Person{at}x"))
        .collect();
    let said: Vec<String> = (0..100).map(|at| format!("Person{at}x")).collect();
    let users = Arc::new(Mutex::new(lines.join("\n")));
    let done = Arc::new(Mutex::new("sent".to_owned()));
    let registry = ToolRegistry::new([
        returning("list_users", &users),
        returning_with(
            "dm",
            schema_of(json!({"user": {"type": "string"}, "body": {"type": "string"}})),
            &done,
        ),
    ])
    .unwrap();
    let policy = RulePolicy::from_json(&policy(LOOKUPS), &registry).unwrap();
    let controller = ToolController::try_new(registry, policy)
        .unwrap()
        .with_provenance_key(ProvenanceKey::new([7; 32]));
    let world = World { controller };
    ask_person(&world, &format!("Ask {}.", said.join(" and ")));
    read(&world, "list_users");
    assert_eq!(dm(&world, "user0"), "allow");
    assert_eq!(dm(&world, "user63"), "allow");
    assert_eq!(dm(&world, "user64"), "ask");
    assert_eq!(dm(&world, "user99"), "ask");
}

/// Found by an independent review of the first version: each failed on it.
#[path = "lookups_review.rs"]
mod review;

/// A directory names the person's records only from a whole result: what the directory tool says
/// while it runs (a progress or log message, judged as its results are) names nobody — its words
/// are the tool's, which an upstream chooses line by line.
#[test]
fn what_a_directory_says_before_its_result_names_nobody() {
    let world = world(MemoryRateCounters::default(), LOOKUPS);
    ask_person(
        &world,
        "Collect the feedback on Ana's checkout mockups and DM it to her.",
    );
    let said = world
        .controller
        .judge_interim("list_users", None, DIRECTORY);
    assert_eq!(said.as_deref(), Some(DIRECTORY));
    assert_eq!(dm(&world, "ana.silva"), "ask");
    // The same directory as a whole result names her.
    read(&world, "list_users");
    assert_eq!(dm(&world, "ana.silva"), "allow");
}
