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
mod review {
    use super::*;

    type Reply = Arc<dyn Fn(&Value) -> String + Send + Sync>;

    fn tool(name: &str, properties: Value, reply: Reply) -> ToolDefinition {
        ToolDefinition::new(
            ToolSpec::new(name, "Review tool.", schema_of(properties)),
            move |arguments: &Value| -> Result<String, ToolError> { Ok(reply(arguments)) },
        )
        .unwrap()
    }

    fn fixed(text: &str) -> Reply {
        let text = text.to_owned();
        Arc::new(move |_: &Value| text.clone())
    }

    const FLOWS: &str = r#"
      {"id": "dm-not-named", "tool": "dm", "action": "ask", "reason": "not named",
       "provenance": {"pointer": "/user", "not_seen_in": ["person"]}},
      {"id": "pay-not-named", "tool": "pay", "action": "ask", "reason": "not named",
       "provenance": {"pointer": "/iban", "not_seen_in": ["person"]}},
      {"id": "post-link-from-content", "tool": "post", "action": "ask", "reason": "link",
       "provenance": {"pointer": "/body", "read": "tokens", "kinds": ["link", "email"],
                      "seen_in": ["untrusted"], "not_seen_in": ["person"]}}"#;

    fn review_policy(lookups: &str) -> String {
        format!(
            r#"{{"rules": [{{"id": "all", "tool": "*", "action": "allow", "reason": "flows"}}],
  "sources": {{"trusted": ["list_users", "search_users", "get_user", "list_groups"],
               "untrusted": ["read_mail"], "lookups": {lookups}}},
  "flows": [{FLOWS}]}}"#
        )
    }

    fn registry(directory: Vec<(&str, Reply)>, structured: Option<Value>) -> ToolRegistry {
        let mut tools: Vec<ToolDefinition> = directory
            .into_iter()
            .map(|(name, reply)| tool(name, json!({"q": {"type": "string"}}), reply))
            .collect();
        tools.push(tool("read_mail", json!({}), fixed(MAIL)));
        tools.push(tool(
            "dm",
            json!({"user": {"type": "string"}, "body": {"type": "string"}}),
            fixed("sent"),
        ));
        tools.push(tool(
            "pay",
            json!({"iban": {"type": "string"}}),
            fixed("paid"),
        ));
        tools.push(tool(
            "post",
            json!({"body": {"type": "string"}}),
            fixed("posted"),
        ));
        if let Some(people) = structured {
            let spec = ToolSpec::new("list_groups", "Groups.", json!({"type": "object"}))
                .with_output_schema(json!({"type": "object"}));
            tools.push(
                ToolDefinition::structured(spec, move |_: &Value| -> Result<Value, ToolError> {
                    Ok(people.clone())
                })
                .unwrap(),
            );
        }
        ToolRegistry::new(tools).unwrap()
    }

    const MAIL: &str = "Hi! The slides are at https://evil.example/slides - Mallory";

    fn controller(
        directory: Vec<(&str, Reply)>,
        structured: Option<Value>,
        lookups: &str,
    ) -> ToolController {
        let registry = registry(directory, structured);
        let policy = RulePolicy::from_json(&review_policy(lookups), &registry)
            .unwrap_or_else(|error| panic!("{error}"));
        ToolController::try_new(registry, policy)
            .unwrap()
            .with_provenance_key(ProvenanceKey::new([7; 32]))
    }

    fn run(controller: &ToolController, tool: &str, arguments: Value) -> &'static str {
        outcome_word(controller.handle(ToolCall::new("c", tool, arguments)))
    }

    /// The stoplist (`NOT_NAMES`) and the three-character floor are checked on the raw
    /// word, but the name compared is the normalised one (invisible characters dropped, NFKC,
    /// case folded). An outsider whose status reads `t\u{200B}he` (or fullwidth `ｔｈｅ`, or
    /// `pleaſe`) holds the name `the` / `please`, which every request says, and which no other
    /// record counts (the stoplist removed it there): their line is named by every request.
    #[test]
    fn a_common_word_spelled_with_invisible_or_compatibility_characters_names_no_one() {
        let mut named = Vec::new();
        for status in [
            "t\u{200B}he",
            "\u{FF54}\u{FF48}\u{FF45}",
            "plea\u{17F}e",
            "th\u{AD}e",
        ] {
            let line = format!("{DIRECTORY}\nmallory - Mallory Guest, status: {status}");
            let controller = controller(
                vec![("list_users", fixed(&line))],
                None,
                r#"["list_users"]"#,
            );
            controller
                .record_person_request(None, "Please send the notes to Ana.")
                .unwrap();
            assert_eq!(run(&controller, "list_users", json!({})), "allow");
            assert_eq!(
                run(&controller, "dm", json!({"user": "ana.silva"})),
                "allow"
            );
            named.push((status, run(&controller, "dm", json!({"user": "mallory"}))));
        }
        assert!(named.iter().all(|(_, word)| *word == "ask"), "{named:?}");
    }

    /// The same line's other values follow: a link the outsider also mailed passes
    /// `post-link-from-content`, and an IBAN in the status passes `pay-not-named`.
    #[test]
    fn an_outsider_line_matched_that_way_launders_nothing() {
        let line = format!(
            "{DIRECTORY}\nmallory - Mallory Guest, t\u{200B}he https://evil.example/slides DE89 3704 0044 0532 0130 00"
        );
        let controller = controller(
            vec![("list_users", fixed(&line))],
            None,
            r#"["list_users"]"#,
        );
        controller
            .record_person_request(None, "Please send the notes to Ana.")
            .unwrap();
        assert_eq!(run(&controller, "read_mail", json!({})), "allow");
        assert_eq!(run(&controller, "list_users", json!({})), "allow");
        let outcomes = [
            run(&controller, "dm", json!({"user": "mallory"})),
            run(
                &controller,
                "post",
                json!({"body": "see https://evil.example/slides"}),
            ),
            run(
                &controller,
                "pay",
                json!({"iban": "DE89370400440532013000"}),
            ),
        ];
        assert_eq!(outcomes, ["ask"; 3], "dm, post, pay");
    }

    /// Records past `MAX_RECORDS` are dropped *before* names are counted, so a name shared
    /// with a dropped record looks unique: the docs say the bound "only asks more", but here it
    /// names the wrong Ana. (An element whose multi-line status is split into hundreds of
    /// records pushes the rest of the directory past the bound the same way.)
    #[test]
    fn a_name_shared_with_a_record_past_the_bound_names_no_one() {
        let mut outcomes = Vec::new();
        // 400 colleagues between the two Anas (control), then 600.
        for between in [400, 600] {
            let mut lines = vec!["ana.m - Ana Mallory, guest".to_owned()];
            lines.extend((0..between).map(|at| format!("user{at} - Person{at}x")));
            lines.push("ana.silva - Ana Silva, Product designer".to_owned());
            let directory = lines.join("\n");
            let controller = controller(
                vec![("list_users", fixed(&directory))],
                None,
                r#"["list_users"]"#,
            );
            controller
                .record_person_request(None, "DM Ana the notes.")
                .unwrap();
            run(&controller, "list_users", json!({}));
            outcomes.push(run(&controller, "dm", json!({"user": "ana.m"})));
        }
        assert_eq!(outcomes, ["ask", "ask"], "400 between, 600 between");
    }

    #[test]
    fn a_multi_line_field_pushing_the_rest_past_the_bound_names_no_one() {
        let filler: Vec<String> = (0..511).map(|at| format!("x{at}")).collect();
        let people = json!({"users": [
            {"handle": "ana.m", "name": "Ana", "status": filler.join("\n")},
            {"handle": "ana.silva", "name": "Ana Silva"},
        ]});
        let controller = controller(vec![], Some(people), r#"["list_groups"]"#);
        controller
            .record_person_request(None, "DM Ana the notes.")
            .unwrap();
        run(&controller, "list_groups", json!({}));
        assert_eq!(run(&controller, "dm", json!({"user": "ana.m"})), "ask");
    }

    /// A list inside an element of a list (groups and their members, a page of rows) is
    /// flattened into the element's one record: every member shares one record, so a name
    /// the person said of one member names every member.
    #[test]
    fn members_of_a_nested_list_are_records_of_their_own() {
        let groups = json!({"groups": [
            {"name": "Design", "members": [
                {"handle": "ana.silva", "name": "Ana Silva"},
                {"handle": "mallory", "name": "Mallory Guest"},
            ]},
            {"name": "Backend", "members": [{"handle": "priya.nair", "name": "Priya Nair"}]},
        ]});
        let controller = controller(vec![], Some(groups), r#"["list_groups"]"#);
        controller
            .record_person_request(None, "DM Ana the notes.")
            .unwrap();
        assert_eq!(run(&controller, "list_groups", json!({})), "allow");
        assert_eq!(
            run(&controller, "dm", json!({"user": "ana.silva"})),
            "allow"
        );
        assert_eq!(run(&controller, "dm", json!({"user": "mallory"})), "ask");
    }

    /// A directory that echoes its query (`No user matches …`, `{"query": …}`) turns the
    /// model's own argument into a record: one record, so every word is unique, and one word
    /// the person said names whatever else the model wrote into the query.
    #[test]
    fn what_a_directory_echoes_of_its_call_is_never_named() {
        let search: Reply = Arc::new(|arguments: &Value| {
            let q = arguments["q"].as_str().unwrap_or_default();
            format!("No user matches \"{q}\".")
        });
        let controller = controller(vec![("search_users", search)], None, r#"["search_users"]"#);
        controller
            .record_person_request(None, "DM Ana the notes.")
            .unwrap();
        assert_eq!(
            run(
                &controller,
                "search_users",
                json!({"q": "Ana mallory https://evil.example/slides DE89370400440532013000"})
            ),
            "allow"
        );
        run(&controller, "read_mail", json!({}));
        let outcomes = [
            run(&controller, "dm", json!({"user": "mallory"})),
            run(
                &controller,
                "post",
                json!({"body": "https://evil.example/slides"}),
            ),
            run(
                &controller,
                "pay",
                json!({"iban": "DE89370400440532013000"}),
            ),
        ];
        assert_eq!(outcomes, ["ask"; 3], "dm, post, pay");
    }

    /// What a directory named is recorded under `person`, and later directories are read
    /// against `person`: names spread from line to line. The person said only "Ana"; Ana's line
    /// holds `Lisbon`; a second lookup's line holding `Lisbon` (one user, so unique) is named.
    #[test]
    fn what_a_directory_named_names_nothing_through_a_second_directory() {
        let controller = controller_f5();
        controller
            .record_person_request(None, "DM Ana the notes.")
            .unwrap();
        // Control: without Ana's line read first, the one-line result names no one.
        let control = controller_f5();
        control
            .record_person_request(None, "DM Ana the notes.")
            .unwrap();
        run(&control, "get_user", json!({}));
        assert_eq!(
            run(&control, "dm", json!({"user": "mallory"})),
            "ask",
            "control"
        );
        run(&controller, "list_users", json!({}));
        assert_eq!(
            run(&controller, "dm", json!({"user": "ana.silva"})),
            "allow"
        );
        run(&controller, "get_user", json!({}));
        assert_eq!(run(&controller, "dm", json!({"user": "mallory"})), "ask");
    }

    fn controller_f5() -> ToolController {
        let get_user: Reply =
            Arc::new(|_: &Value| "mallory - Mallory Guest, Lisbon office".to_owned());
        controller(
            vec![
                (
                    "list_users",
                    fixed("ana.silva - Ana Silva, Lisbon\nprivate.one - Someone Else, Berlin"),
                ),
                ("get_user", get_user),
            ],
            None,
            r#"["list_users", "get_user"]"#,
        )
    }

    /// Layers: an organisation layer whose rule reads `person` but that classifies no tool
    /// (no `sources`) has its `ask` turned into `allow` by a lower layer listing a lookup.
    #[test]
    fn a_lower_layer_lookup_does_not_loosen_a_higher_layer_person_rule() {
        let make = || registry(vec![("list_users", fixed(DIRECTORY))], None);
        let organisation = format!(
            r#"{{"rules": [{{"id": "all", "tool": "*", "action": "allow", "reason": "flows"}}],
                "flows": [{FLOWS}]}}"#
        );
        let project = r#"{"rules": [{"id": "all", "tool": "*", "action": "allow", "reason": "ok"}],
            "sources": {"trusted": ["list_users"], "lookups": ["list_users"]}}"#;
        let layers = Layers::new()
            .layer(
                "organisation",
                RulePolicy::from_json(&organisation, &make()).unwrap(),
            )
            .unwrap()
            .layer("project", RulePolicy::from_json(project, &make()).unwrap())
            .unwrap();
        let controller = ToolController::try_new(make(), layers)
            .unwrap()
            .with_provenance_key(ProvenanceKey::new([7; 32]));
        controller
            .record_person_request(None, "DM Ana the notes.")
            .unwrap();
        assert_eq!(run(&controller, "list_users", json!({})), "allow");
        assert_eq!(run(&controller, "dm", json!({"user": "ana.silva"})), "ask");
    }

    /// Counts the looks each `take` is asked.
    #[derive(Debug, Default)]
    struct Counting {
        inner: MemoryRateCounters,
        calls: std::sync::atomic::AtomicUsize,
        looks: std::sync::atomic::AtomicUsize,
    }

    impl RateCounters for Counting {
        fn take(
            &self,
            takes: &[toolgate::limits::Take<'_>],
            now_ms: u64,
        ) -> Result<toolgate::limits::Taken, toolgate::limits::CounterError> {
            use std::sync::atomic::Ordering::Relaxed;
            self.calls.fetch_add(1, Relaxed);
            self.looks.fetch_add(takes.len(), Relaxed);
            self.inner.take(takes, now_ms)
        }
    }

    /// Each round asks the store again for every remaining look: O(records named × looks).
    /// A person who pasted a long text and a 512-line directory make ~500 rounds of ~1,500
    /// looks each — in SQLite and PostgreSQL one query per look (two in PostgreSQL, with the
    /// advisory lock), on the result's path.
    #[test]
    fn a_directory_costs_the_store_about_one_look_per_name() {
        let words: Vec<String> = (0..512).map(|at| format!("Word{at}q")).collect();
        let lines: Vec<String> = words
            .iter()
            .enumerate()
            .map(|(at, word)| format!("user{at} - {word} Surname{at}k Team{at}z"))
            .collect();
        let counters = Arc::new(Counting::default());
        let registry = registry(vec![("list_users", fixed(&lines.join("\n")))], None);
        let policy = RulePolicy::from_json(&review_policy(r#"["list_users"]"#), &registry).unwrap();
        let controller = ToolController::try_new(registry, policy)
            .unwrap()
            .with_rate_counters(Arc::clone(&counters))
            .with_provenance_key(ProvenanceKey::new([7; 32]));
        controller
            .record_person_request(None, &format!("Summarise: {}", words.join(" ")))
            .unwrap();
        use std::sync::atomic::Ordering::Relaxed;
        let before = counters.looks.load(Relaxed);
        run(&controller, "list_users", json!({}));
        let looks = counters.looks.load(Relaxed) - before;
        // The first 64 records named (the bound), the rest asked: 64 rounds of 16 looks, and
        // the recording (2,050 in all; the first version asked 529,922 for all 512 records).
        assert_eq!(run(&controller, "dm", json!({"user": "user0"})), "allow");
        assert_eq!(run(&controller, "dm", json!({"user": "user63"})), "allow");
        assert_eq!(run(&controller, "dm", json!({"user": "user64"})), "ask");
        assert!(looks < 4096, "{looks} looks for one directory read");
    }

    /// Found by a second independent review, of the version the first review's fixes made.
    mod second {
        use super::*;

        /// A tool taking any arguments (`{"type": "object"}`), replying `reply(arguments)`.
        fn open_tool(name: &str, reply: Reply) -> ToolDefinition {
            ToolDefinition::new(
                ToolSpec::new(name, "Review tool.", json!({"type": "object"})),
                move |arguments: &Value| -> Result<String, ToolError> { Ok(reply(arguments)) },
            )
            .unwrap()
        }

        fn structured_tool(name: &str, value: Value) -> ToolDefinition {
            let spec = ToolSpec::new(name, "Review tool.", json!({"type": "object"}))
                .with_output_schema(json!({"type": "object"}));
            ToolDefinition::structured(spec, move |_: &Value| -> Result<Value, ToolError> {
                Ok(value.clone())
            })
            .unwrap()
        }

        /// Directories `tools` (all trusted, all lookups), `read_mail` untrusted, and the flows.
        fn with(tools: Vec<ToolDefinition>) -> ToolController {
            let names: Vec<String> = tools.iter().map(|t| t.spec().name.clone()).collect();
            let mut all = tools;
            all.push(tool("read_mail", json!({}), fixed(MAIL)));
            all.push(tool(
                "dm",
                json!({"user": {"type": "string"}, "body": {"type": "string"}}),
                fixed("sent"),
            ));
            all.push(tool(
                "pay",
                json!({"iban": {"type": "string"}}),
                fixed("paid"),
            ));
            all.push(tool(
                "post",
                json!({"body": {"type": "string"}}),
                fixed("posted"),
            ));
            all.push(tool(
                "send_email",
                json!({"to": {"type": "string"}}),
                fixed("sent"),
            ));
            let registry = ToolRegistry::new(all).unwrap();
            let list = serde_json::to_string(&names).unwrap();
            let text = format!(
                r#"{{"rules": [{{"id": "all", "tool": "*", "action": "allow", "reason": "flows"}}],
  "sources": {{"trusted": {list}, "untrusted": ["read_mail"], "lookups": {list}}},
  "flows": [{FLOWS},
      {{"id": "mail-not-named", "tool": "send_email", "action": "ask", "reason": "not named",
       "provenance": {{"pointer": "/to", "not_seen_in": ["person"]}}}}]}}"#
            );
            let policy =
                RulePolicy::from_json(&text, &registry).unwrap_or_else(|error| panic!("{error}"));
            ToolController::try_new(registry, policy)
                .unwrap()
                .with_provenance_key(ProvenanceKey::new([7; 32]))
        }

        const PEOPLE: &str = "ana.silva - Ana Silva, Product designer, Lisbon\n\
             mallory - Mallory Guest, Product designer, Lisbon\n\
             jonas.weber - Jonas Weber, Frontend engineer, reports to Ana Silva\n\
             priya.nair - Priya Nair, Backend lead";

        /// A search over the directory: the lines holding the query (case aside).
        fn search() -> Reply {
            Arc::new(|arguments: &Value| {
                let q = arguments["q"].as_str().unwrap_or_default().to_lowercase();
                let found: Vec<&str> = PEOPLE
                    .lines()
                    .filter(|line| line.to_lowercase().contains(&q))
                    .collect();
                if found.is_empty() {
                    "No user matches.".to_owned()
                } else {
                    found.join("\n")
                }
            })
        }

        /// Uniqueness is over the result, and the model picks the result: a search (or a
        /// `get_user`, or a page) returning one record makes every word of it unique. "The
        /// product designer" is Ana or Mallory — the full listing names neither (control) —
        /// but `search_users {"q": "guest"}` returns Mallory's line alone, so it is named; and
        /// `{"q": "jonas"}` returns the line of Jonas, who "reports to Ana Silva", so "DM Ana"
        /// names jonas.weber — from lines the deployment itself keeps.
        #[test]
        fn a_filtered_result_makes_a_shared_word_unique() {
            let control = with(vec![tool("list_users", json!({}), fixed(PEOPLE))]);
            control
                .record_person_request(None, "Ask the product designer for the mockups.")
                .unwrap();
            run(&control, "list_users", json!({}));
            assert_eq!(
                run(&control, "dm", json!({"user": "mallory"})),
                "ask",
                "control"
            );

            let designer = with(vec![tool(
                "search_users",
                json!({"q": {"type": "string"}}),
                search(),
            )]);
            designer
                .record_person_request(None, "Ask the product designer for the mockups.")
                .unwrap();
            run(&designer, "search_users", json!({"q": "guest"}));
            let by_role = run(&designer, "dm", json!({"user": "mallory"}));

            let manager = with(vec![tool(
                "search_users",
                json!({"q": {"type": "string"}}),
                search(),
            )]);
            manager
                .record_person_request(None, "DM Ana the notes.")
                .unwrap();
            run(&manager, "search_users", json!({"q": "jonas"}));
            let by_mention = run(&manager, "dm", json!({"user": "jonas.weber"}));
            assert_eq!(
                [by_role, by_mention],
                ["ask", "ask"],
                "search guest, search jonas"
            );
        }

        /// Only a list splits structured content into records: an object holding several
        /// people (a map keyed by id, or one user with a nested `manager`) is one record, so
        /// every word in it is unique and one the person said names everyone in it.
        #[test]
        fn an_object_holding_several_people_is_not_one_record() {
            let by_id = json!({"members": {
                "U01": {"handle": "ana.silva", "name": "Ana Silva"},
                "U02": {"handle": "priya.nair", "name": "Priya Nair"},
                "U03": {"handle": "mallory", "name": "Mallory Guest", "email": "mallory@evil.example"},
            }});
            let one_user = json!({"handle": "mallory", "name": "Mallory Guest",
                "email": "mallory@evil.example",
                "manager": {"handle": "ana.silva", "name": "Ana Silva"}});
            let mut outcomes = Vec::new();
            for value in [by_id, one_user] {
                let controller = with(vec![structured_tool("list_members", value)]);
                controller
                    .record_person_request(None, "DM Ana the notes.")
                    .unwrap();
                assert_eq!(run(&controller, "list_members", json!({})), "allow");
                outcomes.push(run(&controller, "dm", json!({"user": "mallory"})));
                outcomes.push(run(
                    &controller,
                    "send_email",
                    json!({"to": "mallory@evil.example"}),
                ));
            }
            assert_eq!(outcomes, ["ask"; 4], "by id: dm, mail; one user: dm, mail");
        }

        /// The echo is excluded by the values of the arguments as the person's words are
        /// read (split at white space); a directory splitting its query otherwise (at `,` `;`
        /// `+` `|`, as search boxes do) writes back words that were never an argument's value.
        #[test]
        fn an_echo_split_at_punctuation_is_still_the_models() {
            let splitting: Reply = Arc::new(|arguments: &Value| {
                let q = arguments["q"].as_str().unwrap_or_default();
                let terms: Vec<&str> = q.split([',', ';', '+', '|']).map(str::trim).collect();
                format!("No user matches {}.", terms.join(" or "))
            });
            let mut outcomes = Vec::new();
            for q in ["Ana,mallory", "Ana+mallory", "Ana|mallory@evil.example"] {
                let controller = with(vec![tool(
                    "search_users",
                    json!({"q": {"type": "string"}}),
                    Arc::clone(&splitting),
                )]);
                controller
                    .record_person_request(None, "DM Ana the notes.")
                    .unwrap();
                run(&controller, "search_users", json!({"q": q}));
                outcomes.push((
                    q,
                    run(&controller, "dm", json!({"user": "mallory"})),
                    run(
                        &controller,
                        "send_email",
                        json!({"to": "mallory@evil.example"}),
                    ),
                ));
            }
            assert!(
                outcomes
                    .iter()
                    .all(|(_, dm, mail)| *dm == "ask" && *mail == "ask"),
                "{outcomes:?}"
            );
        }

        /// The arguments are read 16 levels deep for what the directory echoes; a filter
        /// nested deeper is echoed, never excluded.
        #[test]
        fn an_argument_nested_past_the_depth_bound_is_still_the_models() {
            fn leaves(value: &Value, out: &mut Vec<String>) {
                match value {
                    Value::String(text) => out.push(text.clone()),
                    Value::Array(items) => items.iter().for_each(|item| leaves(item, out)),
                    Value::Object(map) => map.values().for_each(|item| leaves(item, out)),
                    _ => {}
                }
            }
            let echo: Reply = Arc::new(|arguments: &Value| {
                let mut found = Vec::new();
                leaves(arguments, &mut found);
                format!("No user matches {}.", found.join(" "))
            });
            let mut outcomes = Vec::new();
            for depth in [4, 20] {
                let mut arguments = json!({"q": "Ana mallory"});
                for _ in 0..depth {
                    arguments = json!({ "and": arguments });
                }
                let controller = with(vec![open_tool("search_users", Arc::clone(&echo))]);
                controller
                    .record_person_request(None, "DM Ana the notes.")
                    .unwrap();
                assert_eq!(run(&controller, "search_users", arguments), "allow");
                outcomes.push(run(&controller, "dm", json!({"user": "mallory"})));
            }
            assert_eq!(outcomes, ["ask", "ask"], "nested 4, nested 20");
        }

        /// Records of a text are `str::lines`: a directory whose lines end in `\r` alone
        /// (or U+2028, NEL) is one record, so one name the person said names every line.
        #[test]
        fn lines_ending_in_a_carriage_return_are_records_of_their_own() {
            let mut outcomes = Vec::new();
            for separator in ["\r", "\u{2028}", "\u{85}"] {
                let directory = PEOPLE.replace('\n', separator);
                let controller = with(vec![tool("list_users", json!({}), fixed(&directory))]);
                controller
                    .record_person_request(None, "DM Priya the notes.")
                    .unwrap();
                run(&controller, "list_users", json!({}));
                assert_eq!(
                    run(&controller, "dm", json!({"user": "priya.nair"})),
                    "allow"
                );
                outcomes.push(run(&controller, "dm", json!({"user": "mallory"})));
            }
            assert_eq!(outcomes, ["ask"; 3], "\\r, U+2028, NEL");
        }

        /// Structured content is read 16 levels deep, and what lies deeper is dropped
        /// *before* names are counted — the same fault the first review found for the record
        /// bound, left at the depth bound: in an org chart (two levels a report) the Ana nine
        /// levels down is never counted, so "Ana" looks unique to the Ana near the top.
        #[test]
        fn a_name_shared_with_a_record_past_the_depth_bound_names_no_one() {
            let mut outcomes = Vec::new();
            for levels in [4, 9] {
                let mut chart = json!({"handle": "ana.silva", "name": "Ana Silva", "reports": []});
                for at in 0..levels {
                    chart = json!({"handle": format!("boss{at}"), "name": format!("Boss{at}x"),
                                   "reports": [chart]});
                }
                let org = json!({"people": [
                    {"handle": "ana.costa", "name": "Ana Costa", "reports": []},
                    chart,
                ]});
                let controller = with(vec![structured_tool("org_chart", org)]);
                controller
                    .record_person_request(None, "DM Ana the notes.")
                    .unwrap();
                assert_eq!(run(&controller, "org_chart", json!({})), "allow");
                outcomes.push(run(&controller, "dm", json!({"user": "ana.costa"})));
            }
            assert_eq!(
                outcomes,
                ["ask", "ask"],
                "Ana Silva 4 levels down, 9 levels down"
            );
        }

        /// Holders are counted over white-space words only: where the line of the person
        /// meant glues the name to punctuation (`Silva,Ana`), it does not
        /// count as holding `ana`, and the one other row that says `Ana` with a space (a mentor,
        /// a manager, a status) holds it alone — so "DM Ana" names Priya's row.
        #[test]
        fn a_name_glued_to_punctuation_still_counts_as_held() {
            let csv = "ana.silva - Silva,Ana (Product designer)\n\
                 priya.nair - Nair,Priya (Backend lead, mentor: Ana)\n\
                 jonas.weber - Weber,Jonas (Frontend engineer)";
            let controller = with(vec![tool("list_users", json!({}), fixed(csv))]);
            controller
                .record_person_request(None, "DM Ana the notes.")
                .unwrap();
            run(&controller, "list_users", json!({}));
            assert_eq!(run(&controller, "dm", json!({"user": "priya.nair"})), "ask");
        }
    }
}
