//! Directories, as found by a second independent review, of the version the first review's
//! fixes made: each test failed on it.

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
    let policy = RulePolicy::from_json(&text, &registry).unwrap_or_else(|error| panic!("{error}"));
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
