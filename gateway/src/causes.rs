//! An error told with the causes its own message leaves out: reqwest says "error sending
//! request", the PostgreSQL client "db error", and the reason is a cause or two below.

/// `error`'s message, then each cause's not already in it, joined by `: `.
pub fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    #[test]
    fn causes_are_told_once_each() {
        /// Says `.1`, caused by `.0`.
        #[derive(Debug)]
        struct Wrapped(std::io::Error, &'static str);
        impl std::fmt::Display for Wrapped {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.1)
            }
        }
        impl std::error::Error for Wrapped {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let refused = || std::io::Error::other("connection refused");
        let wrapped = Wrapped(refused(), "error sending request");
        assert_eq!(
            super::with_causes(&wrapped),
            "error sending request: connection refused"
        );
        // A message that already holds its cause's does not repeat it.
        let said = Wrapped(refused(), "cannot connect: connection refused");
        assert_eq!(
            super::with_causes(&said),
            "cannot connect: connection refused"
        );
    }
}
