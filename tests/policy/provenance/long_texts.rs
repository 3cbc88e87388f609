//! Long texts — a source file, a changelog, a log — are read line by line, and their lines whole
//! are counted apart: as many as their own bound are kept, and the session overflows for none
//! (a 600-line file overflowed it, and every later call a `seen_in` rule judges was asked). What
//! the lines hold — links, addresses, IBANs, numbers — still counts against the bound, and a text
//! of one line is one value, as a field is.

use super::decoded::{after_reading, decided};
use super::*;

/// Whether `book {"hotel": hotel}` is asked after reading `page` (seen in an untrusted result).
fn hotel_asked(controller: &ToolController, hotel: &str) -> bool {
    decided(controller, "book", json!({ "hotel": hotel })) == "ask"
}

/// `count` distinct short lines of a program.
fn program(count: usize) -> Vec<String> {
    (0..count)
        .map(|n| format!("    let total_{n} = add(total_{n}, step);"))
        .collect()
}

#[test]
fn a_source_file_of_six_hundred_lines_overflows_nothing_and_a_results_bound_of_its_lines_are_seen()
{
    let lines = program(600);
    let controller = after_reading(&lines.join("\n"));
    // Not overflowed: a value no result carried is not seen.
    assert!(!hotel_asked(&controller, "Hotel Aurora"));
    // As many lines as a result records apart, exactly: the rest count as never seen. Which
    // ones hangs on their text, never on the key (each controller draws its own), or a call
    // asked in one process would run in the next (their bound below a result's, cutting their
    // sorted digests at it would choose by the key).
    let seen_under = |controller: &ToolController| -> Vec<bool> {
        lines
            .iter()
            .map(|line| hotel_asked(controller, line.trim()))
            .collect()
    };
    let seen = seen_under(&controller);
    let count = seen.iter().filter(|&&seen| seen).count();
    assert_eq!(count, toolgate::provenance::MAX_APART_PER_RESULT);
    for _ in 0..2 {
        assert_eq!(seen_under(&after_reading(&lines.join("\n"))), seen);
    }
    // A shorter file: every line.
    let lines = program(100);
    let controller = after_reading(&lines.join("\r\n"));
    assert!(lines.iter().all(|line| hotel_asked(&controller, line)));
    assert!(!hotel_asked(&controller, "Hotel Aurora"));
}

#[test]
fn what_the_lines_of_a_long_text_hold_still_overflows_the_session() {
    // Distinct addresses, one a line: tokens, not lines, and past a result's bound.
    let past = toolgate::provenance::MAX_VALUES_PER_RESULT + 88;
    let page: String = (0..past)
        .map(|n| format!("- contact a{n}@x.example\n"))
        .collect();
    let controller = after_reading(&page);
    assert!(hotel_asked(&controller, "Hotel Aurora"));
    // A line that is a link is the link, read as written, and counts too.
    let page: String = (0..past)
        .map(|n| format!("https://x.example/{n}\n"))
        .collect();
    let controller = after_reading(&page);
    assert!(hotel_asked(&controller, "Hotel Aurora"));
}

#[test]
fn a_text_of_one_line_is_one_value_and_a_document_of_more_than_a_result_records_overflows() {
    // A JSON document returned as text: each string one value, as a field's, so more distinct
    // strings than a result records overflow the session; so does a list of them written one a
    // line.
    let items: Vec<String> = (0..toolgate::provenance::MAX_VALUES_PER_RESULT + 88)
        .map(|n| format!("Hotel {n:03}"))
        .collect();
    let controller = after_reading(&json!({ "hotels": items }).to_string());
    assert!(hotel_asked(&controller, "Hotel Aurora"));
    let controller = after_reading(&serde_json::to_string_pretty(&items).unwrap());
    assert!(hotel_asked(&controller, "Hotel Aurora"));
    // A hotel on a line of its own in a short mail is seen, as before.
    let controller = after_reading("Hi,\nwe recommend\nMallory Inn\nCheers");
    assert!(hotel_asked(&controller, "Mallory Inn"));
    assert!(hotel_asked(&controller, "mallory  inn"));
}

#[test]
fn lines_past_the_values_a_result_is_read_for_cut_its_reading_and_overflow_the_session() {
    // An independent attack on the first version: lines counted apart stopped at 65,536
    // without cutting, and two distinct lines hid every value after them — a line, a page's
    // script data, a document's string.
    let padding = "x\n".repeat(70_000);
    for after in [
        "Evil Hotel\n",
        "<script>var d = {\"hotel\": \"Evil Hotel\"};</script>\n",
        "{\"hotel\": \"Evil Hotel\\nBook now\"}",
    ] {
        let controller = after_reading(&format!("{padding}{after}"));
        assert!(hotel_asked(&controller, "Hotel Aurora"), "{after}");
    }
    // Fewer lines are read whole, and what follows them is seen.
    let controller = after_reading(&format!("{}Evil Hotel\n", "x\n".repeat(60_000)));
    assert!(!hotel_asked(&controller, "Hotel Aurora"));
    assert!(hotel_asked(&controller, "Evil Hotel"));
}

#[test]
fn a_name_with_blank_lines_around_it_is_one_line_and_counts_against_the_bound() {
    // The independent attack: `"Evil Hotel\n\n"` counted as several lines, so 600 lines
    // elsewhere in the result (sorted before it) left it unseen, where the name alone was seen.
    let padding: Vec<String> = (0..600).map(|n| format!("a{n:03}")).collect();
    for hotel in [
        "Evil Hotel",
        "Evil Hotel\n\n",
        "\nEvil Hotel",
        " \n Evil Hotel \r\n\t\n",
    ] {
        let document = json!({"pad": padding.join("\n"), "hotel": hotel}).to_string();
        let controller = after_reading(&document);
        assert!(!hotel_asked(&controller, "Hotel Aurora"), "{hotel:?}");
        assert!(hotel_asked(&controller, "Evil Hotel"), "{hotel:?}");
    }
}

#[test]
fn the_values_of_documents_inside_other_text_are_read_up_to_the_values_a_result_is_read_for() {
    // Past 65,536 values of documents inside other text, their reading stops (it cuts
    // nothing): a value after them is not read, however it sorts among the ones kept.
    let page = |count: usize| {
        let mut items: Vec<String> = (0..count).map(|n| format!("b{n:05}")).collect();
        items.push("a hotel".to_owned());
        format!("Result: {} (cached)", json!({ "items": items }))
    };
    let within = after_reading(&page(60_000));
    assert!(!hotel_asked(&within, "Hotel Aurora"));
    assert!(hotel_asked(&within, "a hotel"));
    let past = after_reading(&page(70_000));
    assert!(!hotel_asked(&past, "Hotel Aurora"));
    assert!(!hotel_asked(&past, "a hotel"));
    assert!(hotel_asked(&past, "b00000"));
}
