//! Python-literal values, as python-magnumclient sends them.
//!
//! python-magnumclient sends some JSON-Patch values (labels, node labels and
//! taints, federation properties and members) as the `str()` of a Python dict
//! or list, e.g. `"{'a': 'b', 'n': 1}"`, and Magnum decodes them with
//! `ast.literal_eval`. [`parse_literal`] accepts JSON text and what `str()`
//! writes for a dict or list of strings, numbers, booleans and `None`;
//! [`python_str`] renders a JSON value the way Python's `str()` renders the
//! equivalent object, for echoing values in Magnum's style.
//!
//! Accepted Python syntax, which is what `str()` and `repr` write:
//!
//! * dicts (`{'k': v}`, string keys) and lists (`[..]`), nested;
//! * strings quoted with `'` or `"`, with the escapes `repr` writes
//!   (`\\ \' \t \n \r \xNN \uNNNN \UNNNNNNNN`, and `\"`);
//! * integers that fit in an `i64` or `u64`, and finite floats (`1.5`,
//!   `1e-05`, `1e+16`), each with an optional leading `-`;
//! * `True`, `False`, and `None` (which becomes `null`);
//! * whitespace between tokens.
//!
//! Not accepted: anything else `ast.literal_eval` knows (tuples, sets, triple
//! quotes, string prefixes, comments, `0x`, `1_000`, trailing commas), and
//! `inf`/`nan`, which JSON cannot hold. A repeated key keeps its last value,
//! as in Python.
//!
//! Nesting of dicts and lists is limited to [`MAX_DEPTH`] levels, for JSON
//! input as well. Error positions count characters (not bytes) from 0.
//!
//! Valid JSON is taken as JSON, with serde_json's rules: there an integer
//! beyond the `i64`/`u64` range becomes a float, while in Python syntax it is
//! an error.

use serde_json::{Map, Number, Value};

/// Deepest nesting of containers that [`parse_literal`] accepts.
pub const MAX_DEPTH: usize = 64;

/// Why a text could not be parsed, as a human sentence, with the character
/// position (counted from 0) where the problem was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct LiteralError {
    pub message: String,
    pub position: usize,
}

impl LiteralError {
    fn new(message: impl Into<String>, position: usize) -> Self {
        LiteralError {
            message: message.into(),
            position,
        }
    }

    fn too_deep(position: usize) -> Self {
        LiteralError::new(format!("nesting deeper than {MAX_DEPTH} levels"), position)
    }
}

/// Parse `text` as JSON if it is valid JSON, else as the `str()` of a Python
/// value (see the module documentation for the accepted syntax).
pub fn parse_literal(text: &str) -> Result<Value, LiteralError> {
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        check_json_depth(text)?;
        return Ok(value);
    }
    let mut parser = Parser::new(text);
    let value = parser.parse_value(0)?;
    parser.skip_ws();
    match parser.peek() {
        None => Ok(value),
        Some(c) => Err(parser.unexpected(c, parser.pos)),
    }
}

/// [`parse_literal`] for text a client sent: a value holding a NUL character anywhere (in a
/// string or a key, written raw or as an escape) is refused, since no stored field can hold
/// one. The position is that of the first NUL or escape of one.
pub fn parse_request_literal(text: &str) -> Result<Value, LiteralError> {
    let value = parse_literal(text)?;
    if holds_nul(&value) {
        return Err(LiteralError::new(
            format!(
                "a NUL character is not allowed, at position {}",
                nul_position(text)
            ),
            nul_position(text),
        ));
    }
    Ok(value)
}

/// Whether any string or key of `value` holds a NUL character (without recursion).
pub fn holds_nul(value: &Value) -> bool {
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) if s.contains('\0') => return true,
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => {
                if map.keys().any(|k| k.contains('\0')) {
                    return true;
                }
                stack.extend(map.values());
            }
            _ => {}
        }
    }
    false
}

/// The character position of the first NUL of `text`, raw or escaped (`\x00`, `\u0000`,
/// `\U00000000`); 0 when there is none.
fn nul_position(text: &str) -> usize {
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\0' => return i,
            '\\' => {
                let rest: String = chars[i + 1..].iter().take(9).collect();
                if rest.starts_with("x00")
                    || rest.starts_with("u0000")
                    || rest.starts_with("U00000000")
                {
                    return i;
                }
                // Skips the escaped character (an escaped backslash included).
                i += 2;
            }
            _ => i += 1,
        }
    }
    0
}

/// Render `value` the way Python's `str()` renders the equivalent object:
/// `{'a': 'b', 'n': 1, 't': True, 'x': None}`, strings quoted as Python's
/// `repr` quotes them, floats as Python writes them (`1.0`, `1e+16`). A
/// top-level string is quoted too (Python's `repr`, not `str`), so that
/// `parse_literal(&python_str(v))` gives `v` back. Works without recursion,
/// at any depth.
///
/// Python decides which characters are printable from the Unicode database;
/// this approximation escapes control, format, separator and private-use
/// characters and writes every other character as it is.
pub fn python_str(value: &Value) -> String {
    enum Item<'a> {
        Value(&'a Value),
        Key(&'a str),
        Text(&'static str),
    }

    let mut out = String::new();
    let mut stack = vec![Item::Value(value)];
    while let Some(item) = stack.pop() {
        match item {
            Item::Text(text) => out.push_str(text),
            Item::Key(key) => {
                push_python_repr_str(&mut out, key);
                out.push_str(": ");
            }
            Item::Value(value) => match value {
                Value::Null => out.push_str("None"),
                Value::Bool(true) => out.push_str("True"),
                Value::Bool(false) => out.push_str("False"),
                Value::Number(number) => push_python_number(&mut out, number),
                Value::String(text) => push_python_repr_str(&mut out, text),
                Value::Array(items) => {
                    out.push('[');
                    stack.push(Item::Text("]"));
                    for (index, item) in items.iter().enumerate().rev() {
                        stack.push(Item::Value(item));
                        if index > 0 {
                            stack.push(Item::Text(", "));
                        }
                    }
                }
                Value::Object(map) => {
                    out.push('{');
                    stack.push(Item::Text("}"));
                    for (index, (key, item)) in map.iter().enumerate().rev() {
                        stack.push(Item::Value(item));
                        stack.push(Item::Key(key));
                        if index > 0 {
                            stack.push(Item::Text(", "));
                        }
                    }
                }
            },
        }
    }
    out
}

/// Reject valid JSON nested deeper than [`MAX_DEPTH`], without recursion.
fn check_json_depth(text: &str) -> Result<(), LiteralError> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (position, c) in text.chars().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '[' | '{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(LiteralError::too_deep(position));
                }
            }
            ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

fn push_python_number(out: &mut String, number: &Number) {
    if let Some(int) = number.as_i64() {
        out.push_str(&int.to_string());
    } else if let Some(int) = number.as_u64() {
        out.push_str(&int.to_string());
    } else if let Some(float) = number.as_f64() {
        out.push_str(&python_float_repr(float));
    } else {
        out.push_str(&number.to_string());
    }
}

/// Python's `repr(float)`: the shortest digits that round-trip, in fixed
/// notation when the decimal exponent is in -4..16, else in scientific
/// notation with a signed exponent of at least two digits.
fn python_float_repr(value: f64) -> String {
    if value.is_nan() {
        return "nan".to_string();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    // `{:e}` writes the shortest round-tripping digits, e.g. "-1.25e-7".
    let scientific = format!("{value:e}");
    let (mantissa, exponent) = scientific
        .split_once('e')
        .unwrap_or((scientific.as_str(), "0"));
    let exponent: i64 = exponent.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let mut out = String::from(sign);
    if (-4..16).contains(&exponent) {
        if exponent >= 0 {
            let point = usize::try_from(exponent).unwrap_or(0) + 1;
            if digits.len() <= point {
                out.push_str(&digits);
                out.push_str(&"0".repeat(point - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..point]);
                out.push('.');
                out.push_str(&digits[point..]);
            }
        } else {
            let zeros = usize::try_from(-exponent - 1).unwrap_or(0);
            out.push_str("0.");
            out.push_str(&"0".repeat(zeros));
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exponent < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", exponent.unsigned_abs()));
    }
    out
}

/// Python's `repr(str)`.
fn push_python_repr_str(out: &mut String, text: &str) {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in text.chars() {
        let code = u32::from(c);
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            _ if c == quote => {
                out.push('\\');
                out.push(c);
            }
            _ if code < 0x20 || code == 0x7f => out.push_str(&format!("\\x{code:02x}")),
            _ if c.is_ascii() || is_printable(c) => out.push(c),
            _ if code < 0x100 => out.push_str(&format!("\\x{code:02x}")),
            _ if code < 0x10000 => out.push_str(&format!("\\u{code:04x}")),
            _ => out.push_str(&format!("\\U{code:08x}")),
        }
    }
    out.push(quote);
}

/// Approximates Python's `str.isprintable()` for one non-ASCII character:
/// false for control (Cc), format (Cf), separator (Zs, Zl, Zp), surrogate
/// and private-use (Co) characters and for noncharacters.
fn is_printable(c: char) -> bool {
    if c.is_control() {
        return false;
    }
    let code = u32::from(c);
    let not_printable = matches!(
        code,
        // Zs other than the ASCII space, Zl, Zp
        0x00A0 | 0x1680 | 0x2000..=0x200A | 0x2028 | 0x2029 | 0x202F | 0x205F | 0x3000
        // Cf
        | 0x00AD | 0x0600..=0x0605 | 0x061C | 0x06DD | 0x070F | 0x0890..=0x0891
        | 0x08E2 | 0x180E | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2064
        | 0x2066..=0x206F | 0xFEFF | 0xFFF9..=0xFFFB | 0x110BD | 0x110CD
        | 0x13430..=0x1343F | 0x1BCA0..=0x1BCA3 | 0x1D173..=0x1D17A | 0xE0001
        | 0xE0020..=0xE007F
        // Co
        | 0xE000..=0xF8FF | 0xF0000..=0xFFFFD | 0x100000..=0x10FFFD
        // noncharacters
        | 0xFDD0..=0xFDEF
    );
    !not_printable && (code & 0xFFFE) != 0xFFFE
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
}

impl Parser {
    fn new(text: &str) -> Self {
        Parser {
            chars: text.chars().collect(),
            pos: 0,
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += 1;
        Some(c)
    }

    fn unexpected(&self, c: char, position: usize) -> LiteralError {
        LiteralError::new(
            format!("unexpected character {c:?} at position {position}"),
            position,
        )
    }

    /// An error for the character at the current position, or for the end.
    fn unexpected_here(&self) -> LiteralError {
        match self.peek() {
            Some(c) => self.unexpected(c, self.pos),
            None => LiteralError::new(
                format!("unexpected end of input at position {}", self.pos),
                self.pos,
            ),
        }
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t' | '\n' | '\r')) {
            self.pos += 1;
        }
    }

    /// Parse one value; `depth` is the number of containers around it.
    fn parse_value(&mut self, depth: usize) -> Result<Value, LiteralError> {
        self.skip_ws();
        let start = self.pos;
        match self.peek() {
            Some('{' | '[') if depth >= MAX_DEPTH => Err(LiteralError::too_deep(start)),
            Some('{') => self.parse_dict(depth + 1),
            Some('[') => self.parse_list(depth + 1),
            Some('\'' | '"') => self.parse_string().map(Value::String),
            Some('-') => self.parse_number(),
            Some(c) if c.is_ascii_digit() => self.parse_number(),
            Some(c) if is_name_char(c) => self.parse_name(),
            _ => Err(self.unexpected_here()),
        }
    }

    /// `{'k': v, ...}`: keys are strings, as `str()` of a labels dict writes them.
    fn parse_dict(&mut self, depth: usize) -> Result<Value, LiteralError> {
        self.pos += 1;
        let mut map = Map::new();
        self.skip_ws();
        if self.peek() == Some('}') {
            self.pos += 1;
            return Ok(Value::Object(map));
        }
        loop {
            self.skip_ws();
            let key_position = self.pos;
            let Value::String(key) = self.parse_value(depth)? else {
                return Err(LiteralError::new(
                    format!("dict key at position {key_position} must be a string"),
                    key_position,
                ));
            };
            self.skip_ws();
            if self.peek() != Some(':') {
                return Err(self.unexpected_here());
            }
            self.pos += 1;
            let value = self.parse_value(depth)?;
            map.insert(key, value);
            self.skip_ws();
            match self.peek() {
                Some(',') => self.pos += 1,
                Some('}') => {
                    self.pos += 1;
                    return Ok(Value::Object(map));
                }
                _ => return Err(self.unexpected_here()),
            }
        }
    }

    /// `[v, ...]`.
    fn parse_list(&mut self, depth: usize) -> Result<Value, LiteralError> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(']') {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        loop {
            items.push(self.parse_value(depth)?);
            self.skip_ws();
            match self.peek() {
                Some(',') => self.pos += 1,
                Some(']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.unexpected_here()),
            }
        }
    }

    /// `True`, `False`, `None`; any other name is refused, a call by name.
    fn parse_name(&mut self) -> Result<Value, LiteralError> {
        let start = self.pos;
        while self.peek().is_some_and(is_name_char) {
            self.pos += 1;
        }
        let name: String = self.chars[start..self.pos].iter().collect();
        match name.as_str() {
            "True" => return Ok(Value::Bool(true)),
            "False" => return Ok(Value::Bool(false)),
            "None" => return Ok(Value::Null),
            _ => {}
        }
        self.skip_ws();
        let message = if self.peek() == Some('(') {
            format!("function call {name}(...) at position {start} is not allowed")
        } else {
            format!("unexpected name '{name}' at position {start}")
        };
        Err(LiteralError::new(message, start))
    }

    /// A string as `repr` writes it, the quote at the current position.
    fn parse_string(&mut self) -> Result<String, LiteralError> {
        let start = self.pos;
        let unterminated = || {
            LiteralError::new(
                format!("unterminated string starting at position {start}"),
                start,
            )
        };
        let quote = self.bump().ok_or_else(unterminated)?;
        let mut out = String::new();
        loop {
            let c = self.bump().ok_or_else(unterminated)?;
            match c {
                _ if c == quote => return Ok(out),
                '\n' | '\r' => return Err(unterminated()),
                '\\' => {
                    let escape_position = self.pos - 1;
                    let e = self.bump().ok_or_else(unterminated)?;
                    let decoded = match e {
                        '\\' | '\'' | '"' => e,
                        'n' => '\n',
                        'r' => '\r',
                        't' => '\t',
                        'x' => self.hex_escape(2, e, escape_position)?,
                        'u' => self.hex_escape(4, e, escape_position)?,
                        'U' => self.hex_escape(8, e, escape_position)?,
                        _ => {
                            return Err(LiteralError::new(
                                format!(
                                    "\\{e} escape at position {escape_position} is not supported"
                                ),
                                escape_position,
                            ))
                        }
                    };
                    out.push(decoded);
                }
                _ => out.push(c),
            }
        }
    }

    /// Exactly `count` hex digits after `\x`, `\u` or `\U`, as a character.
    fn hex_escape(
        &mut self,
        count: usize,
        kind: char,
        escape_position: usize,
    ) -> Result<char, LiteralError> {
        let mut code = 0u32;
        for _ in 0..count {
            let digit = self.peek().and_then(|c| c.to_digit(16)).ok_or_else(|| {
                LiteralError::new(
                    format!("truncated \\{kind} escape at position {escape_position}"),
                    escape_position,
                )
            })?;
            code = code * 16 + digit;
            self.pos += 1;
        }
        char::from_u32(code).ok_or_else(|| {
            let message = if (0xD800..=0xDFFF).contains(&code) {
                format!("lone surrogate in escape at position {escape_position} is not supported")
            } else {
                format!("escape at position {escape_position} is not a valid Unicode character")
            };
            LiteralError::new(message, escape_position)
        })
    }

    /// A run of ASCII digits.
    fn digits(&mut self) -> usize {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        self.pos - start
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, which covers what
    /// `repr` writes for an int or a finite float.
    fn parse_number(&mut self) -> Result<Value, LiteralError> {
        let start = self.pos;
        let invalid =
            || LiteralError::new(format!("invalid number literal at position {start}"), start);
        if self.peek() == Some('-') {
            self.pos += 1;
        }
        let int_start = self.pos;
        let int_len = self.digits();
        if int_len == 0 {
            return Err(invalid());
        }
        if int_len > 1 && self.chars[int_start] == '0' {
            return Err(LiteralError::new(
                format!("leading zeros in decimal integer literal at position {start} are not permitted"),
                start,
            ));
        }
        let mut is_float = false;
        if self.peek() == Some('.') {
            self.pos += 1;
            is_float = true;
            if self.digits() == 0 {
                return Err(invalid());
            }
        }
        if matches!(self.peek(), Some('e' | 'E')) {
            self.pos += 1;
            is_float = true;
            if matches!(self.peek(), Some('+' | '-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(invalid());
            }
        }
        if self.peek().is_some_and(|c| is_name_char(c) || c == '.') {
            return Err(invalid());
        }
        let text: String = self.chars[start..self.pos].iter().collect();
        if !is_float {
            let too_large = || {
                LiteralError::new(
                    format!("integer literal at position {start} is too large"),
                    start,
                )
            };
            return match text.parse::<i64>() {
                Ok(int) => Ok(Value::from(int)),
                Err(_) if text.starts_with('-') => Err(too_large()),
                Err(_) => text
                    .parse::<u64>()
                    .map(Value::from)
                    .map_err(|_| too_large()),
            };
        }
        let value: f64 = text.parse().map_err(|_| invalid())?;
        Number::from_f64(value).map(Value::Number).ok_or_else(|| {
            LiteralError::new(
                format!("float literal at position {start} is out of range"),
                start,
            )
        })
    }
}

fn is_name_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(text: &str) -> Value {
        match parse_literal(text) {
            Ok(value) => value,
            Err(error) => panic!("{text:?} should parse: {error}"),
        }
    }

    fn error(text: &str) -> LiteralError {
        match parse_literal(text) {
            Ok(value) => panic!("{text:?} should be rejected, got {value}"),
            Err(error) => error,
        }
    }

    #[test]
    fn request_literals_refuse_nul_characters_wherever_they_are_written() {
        for (text, position) in [
            (r"{'k': 'v\x00'}", 8),
            (r"{'k\u0000': 'v'}", 3),
            (r"['a', '\U00000000']", 7),
            (r#"{"k": "\u0000"}"#, 7),
            (r"{'a\\': 'b\x00'}", 10),
            ("['\u{0}']", 2),
        ] {
            let err = parse_request_literal(text).expect_err(text);
            assert_eq!(err.position, position, "{text}");
            assert_eq!(
                err.message,
                format!("a NUL character is not allowed, at position {position}"),
                "{text}"
            );
        }
        // An escaped backslash before x00 is no NUL.
        assert_eq!(
            parse_request_literal(r"{'k': 'a\\x00'}").expect("no NUL"),
            json!({"k": "a\\x00"})
        );
        assert!(holds_nul(&json!([{"a": ["\u{0}"]}])));
        assert!(!holds_nul(&json!([{"a": ["b"]}])));
    }

    fn float(value: f64) -> Value {
        Value::Number(Number::from_f64(value).unwrap())
    }

    #[test]
    fn a_magnumclient_labels_dict_is_parsed() {
        assert_eq!(parse("{'a': 'b', 'n': 1}"), json!({"a": "b", "n": 1}));
    }

    #[test]
    fn a_magnumclient_taint_list_is_parsed() {
        assert_eq!(
            parse("[{'key': 'k', 'value': '', 'effect': 'NoExecute'}]"),
            json!([{"key": "k", "value": "", "effect": "NoExecute"}])
        );
    }

    #[test]
    fn json_text_is_parsed_as_json() {
        assert_eq!(
            parse(r#"{"a": [1, 2.5, true, false, null, "x\/y\u00e9"], "b": {}}"#),
            json!({"a": [1, 2.5, true, false, null, "x/yé"], "b": {}})
        );
        assert_eq!(parse(r#""plain""#), json!("plain"));
        assert_eq!(parse("42"), json!(42));
    }

    #[test]
    fn json_keywords_are_not_python_names() {
        let err = error("{'a': true}");
        assert_eq!(err.message, "unexpected name 'true' at position 6");
        assert_eq!(err.position, 6);
        assert_eq!(
            parse(r#"{"a": True, "b": None}"#),
            json!({"a": true, "b": null})
        );
    }

    #[test]
    fn common_escapes_are_decoded() {
        assert_eq!(
            parse(r#"'a\\b\'c\"d\ne\tf\rg\x41\u00e9\U0001F600'"#),
            json!("a\\b'c\"d\ne\tf\rgAé😀")
        );
        assert_eq!(parse(r#""a\'b""#), json!("a'b"));
    }

    #[test]
    fn invalid_escapes_are_rejected() {
        assert_eq!(
            error(r"'ab\x4'").message,
            "truncated \\x escape at position 3"
        );
        assert_eq!(error(r"'\u12'").position, 1);
        assert!(error(r"'\ud800'").message.contains("lone surrogate"));
        assert!(error(r"'\udc00x'").message.contains("lone surrogate"));
        assert!(error(r"'\U00110000'")
            .message
            .contains("not a valid Unicode character"));
        assert!(error(r"'\N{BULLET}'").message.contains("not supported"));
    }

    #[test]
    fn unicode_text_passes_through() {
        assert_eq!(
            parse("{'name': 'café ☕ 日本', 'ключ': 'значение'}"),
            json!({"name": "café ☕ 日本", "ключ": "значение"})
        );
    }

    #[test]
    fn inf_and_nan_are_rejected() {
        assert_eq!(error("inf").message, "unexpected name 'inf' at position 0");
        assert_eq!(error("nan").message, "unexpected name 'nan' at position 0");
        assert!(error("1e400").message.contains("out of range"));
        assert!(error("-1e400").message.contains("out of range"));
        assert!(error("float('inf')").message.contains("function call"));
    }

    #[test]
    fn true_false_and_none_map_to_json() {
        assert_eq!(parse("[True, False, None]"), json!([true, false, null]));
        assert_eq!(parse("None"), Value::Null);
    }

    #[test]
    fn a_repeated_key_keeps_its_last_value() {
        assert_eq!(parse("{'a': 1, 'a': 2}"), json!({"a": 2}));
    }

    #[test]
    fn a_bare_word_is_rejected() {
        let err = error("{'a': foo}");
        assert_eq!(err.message, "unexpected name 'foo' at position 6");
        assert_eq!(err.position, 6);
        assert_eq!(err.to_string(), err.message);
    }

    #[test]
    fn positions_count_characters_not_bytes() {
        assert_eq!(error("['é', @]").position, 6);
    }

    #[test]
    fn empty_and_truncated_input_is_rejected() {
        assert_eq!(error("").message, "unexpected end of input at position 0");
        assert_eq!(
            error("   ").message,
            "unexpected end of input at position 3"
        );
        assert_eq!(
            error("[1, 2").message,
            "unexpected end of input at position 5"
        );
        assert_eq!(error("{'a':").position, 5);
    }

    #[test]
    fn function_calls_and_other_expressions_are_rejected() {
        assert_eq!(
            error("{'a': frozenset([1])}").message,
            "function call frozenset(...) at position 6 is not allowed"
        );
        assert!(error("dict(a=1)").message.contains("function call"));
        assert!(error("__import__ ('os')").message.contains("function call"));
        assert!(error("1 + 2").message.contains("unexpected character '+'"));
        assert!(error("[1][0]").message.contains("unexpected character '['"));
        assert!(error("{**a}").message.contains("unexpected character '*'"));
        assert!(error("...").message.contains("unexpected character '.'"));
    }

    #[test]
    fn nesting_up_to_64_levels_is_accepted() {
        let text = format!("{}{}", "[".repeat(64), "]".repeat(64));
        let mut value = parse(&text);
        let mut depth = 0;
        while let Value::Array(mut items) = value {
            depth += 1;
            value = items.pop().unwrap_or(Value::Null);
        }
        assert_eq!(depth, 64);
        let dicts = format!("{}1{}", "{'a': ".repeat(64), "}".repeat(64));
        assert!(parse_literal(&dicts).is_ok());
    }

    #[test]
    fn python_str_renders_like_python() {
        assert_eq!(
            python_str(&json!({"a": "b", "n": 1, "t": true, "x": null})),
            "{'a': 'b', 'n': 1, 't': True, 'x': None}"
        );
        assert_eq!(
            python_str(&json!([{"effect": "NoExecute", "key": "k", "value": ""}])),
            "[{'effect': 'NoExecute', 'key': 'k', 'value': ''}]"
        );
        assert_eq!(
            python_str(&json!([[], {}, [1, [-2, false]], {"a": {"b": []}}])),
            "[[], {}, [1, [-2, False]], {'a': {'b': []}}]"
        );
        assert_eq!(python_str(&json!("plain")), "'plain'");
        assert_eq!(python_str(&Value::Null), "None");
        assert_eq!(python_str(&json!(u64::MAX)), "18446744073709551615");
    }

    #[test]
    fn python_str_quotes_strings_like_repr() {
        assert_eq!(python_str(&json!("it's")), r#""it's""#);
        assert_eq!(python_str(&json!("say \"hi\"")), r#"'say "hi"'"#);
        assert_eq!(python_str(&json!("both ' and \"")), r#"'both \' and "'"#);
        assert_eq!(python_str(&json!("a\\b\nc\td\re")), r"'a\\b\nc\td\re'");
        assert_eq!(python_str(&json!("\u{7}\u{0}\u{7f}")), r"'\x07\x00\x7f'");
        assert_eq!(python_str(&json!("café ☕ 日本 😀")), "'café ☕ 日本 😀'");
        assert_eq!(
            python_str(&json!("\u{a0}\u{85}\u{200b}\u{e000}\u{e0001}")),
            r"'\xa0\x85\u200b\ue000\U000e0001'"
        );
    }

    #[test]
    fn python_str_renders_floats_like_python() {
        let cases = [
            (1.0, "1.0"),
            (-1.5, "-1.5"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (2.5, "2.5"),
            (123.456, "123.456"),
            (0.1, "0.1"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.2345678901234568e17, "1.2345678901234568e+17"),
            (1e22, "1e+22"),
            (1e300, "1e+300"),
            (5e-324, "5e-324"),
        ];
        for (value, expected) in cases {
            assert_eq!(python_str(&float(value)), expected, "{value:e}");
        }
    }

    #[test]
    fn python_str_renders_deep_values_without_recursion() {
        let mut value = json!(1);
        for _ in 0..1000 {
            value = Value::Array(vec![value]);
        }
        let text = python_str(&value);
        assert_eq!(text.len(), 2001);
        assert_eq!(text, format!("{}1{}", "[".repeat(1000), "]".repeat(1000)));
    }

    #[test]
    fn parse_literal_of_python_str_gives_the_value_back() {
        let values = [
            json!({"a": "b", "n": 1, "t": true, "x": null}),
            json!([{"key": "k", "value": "", "effect": "NoExecute"}]),
            json!({"nested": {"list": [1, -2, 2.5, -0.001, 1e20, [], {}]}, "f": false}),
            json!([
                "it's",
                "say \"hi\"",
                "both ' and \"",
                "back\\slash",
                "\n\t\r\u{0}\u{7f}"
            ]),
            json!({"unicode": "café ☕ 日本 😀 \u{a0}\u{200b}\u{e000}\u{10ffff}"}),
            json!("plain"),
            json!(i64::MIN),
            json!(u64::MAX),
            Value::Null,
        ];
        for value in values {
            let text = python_str(&value);
            assert_eq!(parse(&text), value, "{text}");
        }
    }

    #[test]
    fn nested_dicts_and_lists_are_parsed() {
        assert_eq!(
            parse(
                "{'outer': {'inner': [1, [2, 3], {'deep': [None, []]}]}, 'empty': {}, 'list': []}"
            ),
            json!({
                "outer": {"inner": [1, [2, 3], {"deep": [null, []]}]},
                "empty": {},
                "list": []
            })
        );
    }

    #[test]
    fn double_quoted_strings_are_accepted() {
        assert_eq!(parse(r#"{'a': "it's"}"#), json!({"a": "it's"}));
        assert_eq!(parse(r#"["say 'hi'", 'x']"#), json!(["say 'hi'", "x"]));
    }

    #[test]
    fn numbers_as_repr_writes_them_are_parsed() {
        assert_eq!(parse("{'n': [-1, 0, 7]}"), json!({"n": [-1, 0, 7]}));
        assert_eq!(parse("{'f': -1.5}"), json!({"f": -1.5}));
        assert_eq!(
            parse("['x', 1500.0, 1e-05, 1e+16, 0.0001, -0.0, 1E-2]"),
            json!(["x", 1500.0, 1e-5, 1e16, 0.0001, -0.0, 0.01])
        );
        assert_eq!(parse("['x', -9223372036854775808]"), json!(["x", i64::MIN]));
        assert_eq!(parse("['x', 18446744073709551615]"), json!(["x", u64::MAX]));
    }

    #[test]
    fn malformed_numbers_are_rejected() {
        for text in [
            "1__0", "1_", "1._5", "007", "1j", "1.2.3", "0x", "0b12", "--1", "-True", "1e", "-",
            "+3", ".5", "5.", "1_000", "0x1f", "- 2",
        ] {
            let err = error(text);
            assert!(!err.message.is_empty(), "{text}");
        }
        // Valid JSON takes the JSON path, where big integers become floats.
        assert_eq!(parse("18446744073709551616"), float(18446744073709551616.0));
        assert!(error("{'n': 18446744073709551616}")
            .message
            .contains("too large"));
        assert!(error("['x', -9223372036854775809]")
            .message
            .contains("too large"));
        assert!(error("007").message.contains("leading zeros"));
    }

    #[test]
    fn syntax_str_never_writes_is_rejected() {
        for text in [
            "(1, 2)",
            "{1, 2}",
            "[1, 2,]",
            "{'a': 1,}",
            "u'x'",
            "'''x'''",
            "'a' 'b'",
            "{1: 'a'}",
            "[1] # comment",
            r"'\a'",
            r"'\101'",
        ] {
            let err = error(text);
            assert!(!err.message.is_empty(), "{text}");
        }
    }

    #[test]
    fn surrounding_whitespace_and_newlines_are_allowed() {
        assert_eq!(parse("  \n {'a': 1} \t\n"), json!({"a": 1}));
        assert_eq!(
            parse("{\n  'a': 1,\n  'b': 2\n}\n"),
            json!({"a": 1, "b": 2})
        );
    }

    #[test]
    fn dict_keys_must_be_strings() {
        assert_eq!(
            error("{'a': 1, 1.5: 2}").message,
            "dict key at position 9 must be a string"
        );
        assert_eq!(error("{None: 1}").position, 1);
        assert!(error("{[1, 2]: 1}").message.ends_with("must be a string"));
    }

    #[test]
    fn an_unterminated_string_is_reported_with_its_start() {
        let err = error("{'a': 'b}");
        assert_eq!(err.message, "unterminated string starting at position 6");
        assert_eq!(err.position, 6);
        assert_eq!(
            error("['x', 'y").message,
            "unterminated string starting at position 6"
        );
        assert_eq!(error("'a\nb'").position, 0);
        assert_eq!(error(r"'abc\'").position, 0);
    }

    #[test]
    fn an_unexpected_character_is_reported_with_its_position() {
        let err = error("{'a': 'b', @}");
        assert_eq!(err.message, "unexpected character '@' at position 11");
        assert_eq!(err.position, 11);
        assert_eq!(
            error("{'a': 1 'b': 2}").message,
            r"unexpected character '\'' at position 8"
        );
        assert_eq!(
            error("[1] x").message,
            "unexpected character 'x' at position 4"
        );
        assert_eq!(
            error("[1,,]").message,
            "unexpected character ',' at position 3"
        );
        assert_eq!(error("[,]").position, 1);
        assert_eq!(error("{,}").position, 1);
    }

    #[test]
    fn nesting_deeper_than_64_levels_is_rejected() {
        let python = format!("{}'x'{}", "[".repeat(65), "]".repeat(65));
        let err = error(&python);
        assert_eq!(err.message, "nesting deeper than 64 levels");
        assert_eq!(err.position, 64);

        let json = format!("{}{}", "[".repeat(65), "]".repeat(65));
        assert_eq!(error(&json).message, "nesting deeper than 64 levels");

        let dicts = format!("{}1{}", "{'a': ".repeat(65), "}".repeat(65));
        assert_eq!(error(&dicts).message, "nesting deeper than 64 levels");

        let unclosed = "[".repeat(100_000);
        assert_eq!(error(&unclosed).message, "nesting deeper than 64 levels");
    }
}
