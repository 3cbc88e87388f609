//! Which principal ids and groups a person reads as what they are: the names the config's
//! `[[clients]]` and every token may give (one rule for both sources, so a token cannot name a
//! look-alike of a client).

/// Whether `name` (a principal's id or group, from the config or a token) reads as what it is:
/// not empty, and no white space (a trailing space or a no-break space makes `carol ` look like
/// `carol`, whom four eyes tells apart), control, zero-width, bidi or other invisible character.
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && !name.chars().any(|c| c.is_whitespace() || c.is_control())
        && toolgate::registry::first_invisible(name).is_none()
}
