//! Directories, as found by an independent review of their first version: each test failed on
//! it. The second review's, of the version these fixes made, are in [`second`].

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
    let get_user: Reply = Arc::new(|_: &Value| "mallory - Mallory Guest, Lisbon office".to_owned());
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
#[path = "lookups_review_second.rs"]
mod second;
