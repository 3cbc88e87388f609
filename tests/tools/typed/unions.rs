//! Unions: untagged enums refused when the tool is defined, tagged ones and options accepted.

use super::*;

// Issue 21, item 5: untagged unions are refused when the tool is defined. In each shape, one
// variant carries what a rule on another variant's field watches (a path as a plain string, or
// under another name), so the rule could not judge it; tagged shapes are accepted.

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
enum Target {
    Read {
        #[serde(alias = "file")]
        path: String,
    },
    Fetch {
        url: String,
    },
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
enum PathOrSpec {
    Spec { path: String },
    Plain(String),
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Nested {
    target: PathOrSpec,
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct InList {
    targets: Vec<PathOrSpec>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Optional {
    target: Option<PathOrSpec>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(tag = "kind")]
enum TaggedOuter {
    Copy { from: PathOrSpec },
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
enum Scalars {
    Number(i64),
    Text(String),
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct NumberOrText {
    value: Scalars,
}

fn refused_at<T: DeserializeOwned + Serialize + JsonSchema + 'static>() -> String {
    match ToolDefinition::typed("t", "A typed tool.", |_: T| Ok(String::new())) {
        Err(DefinitionError::UntaggedUnion { tool, place }) => {
            assert_eq!(tool, "t");
            place
        }
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(_) => panic!("accepted"),
    }
}

#[test]
fn untagged_unions_are_refused_when_the_tool_is_defined() {
    let places = [
        ("top level", refused_at::<Target>()),
        ("a field", refused_at::<Nested>()),
        ("a list element", refused_at::<InList>()),
        ("an optional field", refused_at::<Optional>()),
        ("inside a tagged variant", refused_at::<TaggedOuter>()),
        ("of scalars", refused_at::<NumberOrText>()),
    ];
    for (how, place) in &places {
        assert!(place.ends_with("/anyOf"), "{how}: {place}");
    }
    assert_eq!(places[0].1, "/anyOf");
    assert_eq!(places[1].1, "/$defs/PathOrSpec/anyOf");
    let error = ToolDefinition::typed("t", "A typed tool.", |_: Nested| Ok(String::new()))
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.contains("untagged enum") && error.contains("tag the enum"),
        "{error}"
    );
}

#[derive(Deserialize, Serialize, JsonSchema)]
enum External {
    Read { path: String },
    Plain(String),
    Unit,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(tag = "op", content = "args")]
enum AdjacentPaths {
    Read { path: String },
    Plain(String),
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Tagged {
    external: External,
    adjacent: AdjacentPaths,
    optional: Option<External>,
    text: Option<String>,
    units: Vec<Unit>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
enum Unit {
    A,
    B,
}

#[test]
fn tagged_unions_and_options_are_accepted() {
    // The control: every tagged shape serde writes, and `Option`, define a tool.
    assert!(ToolDefinition::typed("t", "A typed tool.", |_: Tagged| Ok(String::new())).is_ok());
    // And a rule on an externally tagged variant's field judges every call of that variant.
    let gate = Gate::new::<External>(&deny_glob("/Read/path", "/etc/*"));
    assert_eq!(
        gate.call(json!({"Read": {"path": "/etc/shadow"}})),
        Seen::Denied
    );
    assert_eq!(
        gate.call(json!({"Plain": "/tmp/x"})),
        Seen::Ran(json!({"Plain": "/tmp/x"}))
    );
}
