//! What a `run:` command line names, read the way `sh` splits it (quotes, backslashes,
//! `;`, `|`, `&&`, `||`, redirections), without running anything: the programs it starts,
//! the input files it names, and the `-J` properties it passes to JMeter.

/// One word of a command line, quotes removed; `operator` for `;`, `|`, `&&`, `>`, ...
#[derive(Debug, Clone, PartialEq, Eq)]
struct Word {
    text: String,
    operator: bool,
}

fn words(line: &str) -> Vec<Word> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    let mut quote: Option<char> = None;
    let flush = |cur: &mut String, in_word: &mut bool, out: &mut Vec<Word>| {
        if *in_word {
            out.push(Word {
                text: std::mem::take(cur),
                operator: false,
            });
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match quote {
            Some(q) if c == q => quote = None,
            Some('"') if c == '\\' => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            Some(_) => cur.push(c),
            None => match c {
                '\'' | '"' => {
                    quote = Some(c);
                    in_word = true;
                }
                '\\' => {
                    if let Some(n) = chars.next() {
                        cur.push(n);
                        in_word = true;
                    }
                }
                c if c.is_whitespace() => flush(&mut cur, &mut in_word, &mut out),
                ';' | '|' | '&' | '>' | '<' | '(' | ')' => {
                    flush(&mut cur, &mut in_word, &mut out);
                    let mut op = c.to_string();
                    while let Some(&n) = chars.peek() {
                        if matches!(n, '|' | '&' | '>') && op.len() < 2 {
                            op.push(n);
                            chars.next();
                        } else {
                            break;
                        }
                    }
                    out.push(Word {
                        text: op,
                        operator: true,
                    });
                }
                '#' if !in_word => break,
                c => {
                    cur.push(c);
                    in_word = true;
                }
            },
        }
    }
    flush(&mut cur, &mut in_word, &mut out);
    out
}

/// Words `sh` runs itself: nothing to find on PATH.
const BUILTINS: &[&str] = &[
    ".", ":", "[", "alias", "break", "case", "cd", "command", "continue", "do", "done", "elif",
    "else", "esac", "eval", "exec", "exit", "export", "false", "fi", "for", "if", "in", "local",
    "read", "return", "set", "shift", "source", "test", "then", "time", "trap", "true", "ulimit",
    "umask", "unset", "until", "wait", "while", "{", "}", "echo", "printf", "kill", "type",
];

/// Extensions of files a load tool reads (a plan, its data, plugins, scripts).
const INPUT_EXTENSIONS: &[&str] = &[
    "jmx",
    "csv",
    "jar",
    "properties",
    "sh",
    "py",
    "groovy",
    "js",
];

/// Flags whose next word is a file the command writes, not one it reads.
const OUTPUT_FLAGS: &[&str] = &[
    "-l", "-j", "-o", "-e", "--jtl", "--out", "--output", "--log",
];

/// What a command line names.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CommandNames {
    /// The programs it starts (first word of each simple command), without `$` in them.
    pub programs: Vec<String>,
    /// Input files (by extension), without `$` in them, as written.
    pub files: Vec<String>,
    /// `-Jname=value` properties.
    pub properties: Vec<String>,
    /// The command loads a property file (`-q`, `-p`, `--addprop`, `--propfile`), so the
    /// properties a plan reads cannot be checked from the command line alone.
    pub property_file: bool,
}

pub fn names(line: &str) -> CommandNames {
    let mut out = CommandNames::default();
    let mut at_start = true;
    let mut after_output = false;
    for w in words(line) {
        if w.operator {
            at_start = matches!(w.text.as_str(), ";" | "|" | "||" | "&&" | "&" | "(" | ")");
            after_output = w.text.starts_with('>');
            continue;
        }
        let text = w.text;
        if at_start {
            // `NAME=value cmd` assigns, then runs cmd.
            if text.split_once('=').is_some_and(|(k, _)| {
                !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            }) {
                continue;
            }
            if text == "exec" || text == "command" || text == "time" {
                continue;
            }
            at_start = false;
            if !BUILTINS.contains(&text.as_str()) && !text.contains('$') {
                out.programs.push(text);
            }
            continue;
        }
        if after_output {
            after_output = false;
            continue;
        }
        if OUTPUT_FLAGS.contains(&text.as_str()) {
            after_output = true;
            continue;
        }
        if matches!(text.as_str(), "-q" | "-p" | "--addprop" | "--propfile") {
            out.property_file = true;
        }
        if let Some(prop) = text.strip_prefix("-J") {
            let name = prop.split_once('=').map_or(prop, |(k, _)| k);
            if !name.is_empty() {
                out.properties.push(name.to_string());
            }
            continue;
        }
        if text.starts_with('-') || text.contains('$') || text.contains('=') {
            continue;
        }
        let is_input = std::path::Path::new(&text)
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| INPUT_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()));
        if is_input {
            out.files.push(text);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_programs_input_files_and_properties() {
        let n = names(
            r#"cd load && JVM_ARGS="-Xmx1g" jmeter -n -t "jmeter/data import.jmx" -Jprofile="PTF - Create 2" -Jrecords=${records} -l "${RESULTS_DIR}/di.jtl" -j out/jmeter.csv | tee log.txt; ./bin/post.sh data/users.csv > results.csv 2>&1 # a.jmx"#,
        );
        assert_eq!(n.programs, ["jmeter", "tee", "./bin/post.sh"]);
        assert_eq!(n.files, ["jmeter/data import.jmx", "data/users.csv"]);
        assert_eq!(n.properties, ["profile", "records"]);
        assert!(!n.property_file);
        let q = names("${ENVCTL} workload --users 2 && jmeter -q user.properties -t p.jmx");
        assert_eq!(q.programs, ["jmeter"]);
        assert!(q.property_file);
        assert_eq!(q.files, ["user.properties", "p.jmx"]);
    }
}
