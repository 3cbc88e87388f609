//! What the person reads is what runs: bidi overrides and zero-width characters in a held call's
//! arguments are shown as visible escapes, never raw (a U+202E would turn the text after it
//! around, a U+200B would hide between letters). The page's text, read back from Chromium, holds
//! no such character at all.

use super::*;

#[tokio::test]
async fn bidi_and_zero_width_characters_are_shown_as_escapes() {
    let Some(python) = python() else { return };
    let Some(driver) = chromedriver() else { return };
    let setup = start_in("approval-page-invisible", Path::new(&python), &driver);
    let alice = agent(setup.mcp, ALICE_KEY).await;
    let id = hold(&alice, "prod\u{202e}dorp\u{200b}x\u{2066}y\u{feff}z").await;
    let browser = browser(setup.driver_port).await;
    sign_in(&browser, setup.admin, BOB_KEY).await;
    let arguments = text_in(&browser, &id, ".arguments").await;
    for escape in ["\\u{202E}", "\\u{200B}", "\\u{2066}", "\\u{FEFF}"] {
        assert!(
            arguments.contains(escape),
            "{escape} not shown: {arguments:?}"
        );
    }
    let page: String = browser
        .execute("return document.body.textContent", vec![])
        .await
        .unwrap()
        .as_str()
        .unwrap()
        .to_owned();
    if let Some(hidden) = page.chars().find(
        |c| matches!(u32::from(*c), 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2069 | 0xFEFF),
    ) {
        panic!("a raw U+{:04X} on the page", u32::from(hidden));
    }
    browser.close().await.unwrap();
    let _ = alice.cancel().await;
}
