//! JVM settings read back out of a `JAVA_OPTIONS`-style variable.
//!
//! envctl writes `-Xmx<N>m [-XX:MetaspaceSize=<N>m] [-XX:MaxMetaspaceSize=<N>m] [options]`
//! (`spec::env::Jvm::java_options`). Import accepts a live value only when writing the parsed
//! settings back gives the same text, so the imported service renders exactly what runs.

/// The `jvm:` block of a service.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Jvm {
    pub xmx: u32,
    pub metaspace: Option<u32>,
    pub max_metaspace: Option<u32>,
    /// Everything after the sizes, verbatim (`jvm.options`).
    pub options: Option<String>,
}

impl Jvm {
    /// The variable's value as envctl would render it.
    pub fn java_options(&self) -> String {
        let mut opts = vec![format!("-Xmx{}m", self.xmx)];
        if let Some(m) = self.metaspace {
            opts.push(format!("-XX:MetaspaceSize={m}m"));
        }
        if let Some(m) = self.max_metaspace {
            opts.push(format!("-XX:MaxMetaspaceSize={m}m"));
        }
        if let Some(extra) = &self.options {
            opts.push(extra.clone());
        }
        opts.join(" ")
    }
}

/// Names of the variables that carry JVM options, in the order they are tried. `HEAP_OPTS`
/// is what the OpenMessaging Benchmark worker reads.
pub const JAVA_VARIABLES: [&str; 3] = ["JAVA_OPTIONS", "JAVA_OPTS", "HEAP_OPTS"];

/// Parses a value into JVM settings, or `None` when it cannot be written back unchanged
/// (no `-Xmx`, sizes in other units or another order): then the variable is kept verbatim.
pub fn parse(value: &str) -> Option<Jvm> {
    let mut words = value.split(' ').peekable();
    let xmx = mib(words.next()?.strip_prefix("-Xmx")?)?;
    let mut metaspace = None;
    let mut max_metaspace = None;
    if let Some(m) = words
        .peek()
        .and_then(|w| w.strip_prefix("-XX:MetaspaceSize="))
    {
        metaspace = Some(mib(m)?);
        words.next();
    }
    if let Some(m) = words
        .peek()
        .and_then(|w| w.strip_prefix("-XX:MaxMetaspaceSize="))
    {
        max_metaspace = Some(mib(m)?);
        words.next();
    }
    let rest: Vec<&str> = words.collect();
    let options = (!rest.is_empty()).then(|| rest.join(" "));
    let jvm = Jvm {
        xmx,
        metaspace,
        max_metaspace,
        options,
    };
    (jvm.java_options() == value).then_some(jvm)
}

/// `3076m` -> 3076. Other units are not rewritten (a `g` would not come back as written).
fn mib(text: &str) -> Option<u32> {
    let digits = text.strip_suffix('m')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_extra_options_come_back_as_written() {
        let jvm = parse("-Xmx3076m -XX:MetaspaceSize=384m -XX:MaxMetaspaceSize=512m").unwrap();
        assert_eq!(
            (jvm.xmx, jvm.metaspace, jvm.max_metaspace, jvm.options),
            (3076, Some(384), Some(512), None)
        );
        let jvm = parse("-Xmx768m -XX:+UseG1GC -Dfile.encoding=UTF-8").unwrap();
        assert_eq!(jvm.xmx, 768);
        assert_eq!(jvm.metaspace, None);
        assert_eq!(
            jvm.options.as_deref(),
            Some("-XX:+UseG1GC -Dfile.encoding=UTF-8")
        );
    }

    #[test]
    fn values_that_would_not_round_trip_are_refused() {
        for value in [
            "",
            "-Xms512m",
            "-Xmx2g",
            "-XX:MetaspaceSize=384m -Xmx3076m",
            "-Xmx0m",
            "-Xmxm",
            "-Xmx99999999999m",
        ] {
            assert_eq!(parse(value), None, "{value:?}");
        }
    }
}
