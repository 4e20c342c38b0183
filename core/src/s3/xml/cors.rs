//! CORS: a bucket's `<CORSConfiguration>` (PutBucketCors, GetBucketCors), checked as S3 checks
//! it, and the matching of a browser's request against its rules (preflight `OPTIONS` and
//! actual requests), sans-IO: the front asks, these functions answer with the headers.
//!
//! Matching follows S3's: the first rule whose `AllowedOrigin` (one `*` wildcard at most),
//! `AllowedMethod` and, for a preflight, every requested header (`AllowedHeader`, one `*` at
//! most, case-insensitive) match gives the answer. Origins compare case-sensitively, as S3's.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::parse::{Doc, malformed_because};
use super::write::XmlWriter;
use crate::s3::{S3Error, S3ErrorCode, S3Result};

/// Largest PutBucketCors body accepted (S3's limit for the configuration: 64 KB).
pub const MAX_CORS_BODY: usize = 64 << 10;
/// Most rules in one configuration (S3's limit).
pub const MAX_CORS_RULES: usize = 100;
/// Longest rule `ID` (S3's limit).
pub const MAX_CORS_RULE_ID: usize = 255;
/// The methods a rule may allow (S3's list).
pub const CORS_METHODS: [&str; 5] = ["GET", "PUT", "POST", "DELETE", "HEAD"];
/// Elements in a 64 KB body: an empty element takes at least four bytes.
const MAX_CORS_ELEMENTS: usize = MAX_CORS_BODY / 4;
/// What the CORS headers of a response depend on (`Vary`).
pub const CORS_VARY: &str = "Origin, Access-Control-Request-Headers, Access-Control-Request-Method";

/// One `<CORSRule>`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CorsRule {
    /// `ID` (up to 255 characters).
    pub id: Option<String>,
    /// `AllowedOrigin`, at least one, each with one `*` at most.
    pub allowed_origins: Vec<String>,
    /// `AllowedMethod`, at least one of [`CORS_METHODS`].
    pub allowed_methods: Vec<String>,
    /// `AllowedHeader`, each with one `*` at most.
    pub allowed_headers: Vec<String>,
    /// `ExposeHeader`.
    pub expose_headers: Vec<String>,
    /// `MaxAgeSeconds`.
    pub max_age_seconds: Option<u32>,
}

/// A bucket's `<CORSConfiguration>`: 1 to [`MAX_CORS_RULES`] rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CorsConfiguration {
    /// The rules, in the order given: the first that matches answers.
    pub rules: Vec<CorsRule>,
}

fn invalid(message: String) -> S3Error {
    S3Error::with_message(S3ErrorCode::InvalidRequest, message)
}

/// `pattern` (at most one `*`, matching any run of characters) against `value`.
fn wildcard_match(pattern: &str, value: &str, ignore_case: bool) -> bool {
    let eq = |a: &str, b: &str| {
        if ignore_case {
            a.eq_ignore_ascii_case(b)
        } else {
            a == b
        }
    };
    match pattern.split_once('*') {
        None => eq(pattern, value),
        Some((head, tail)) => {
            value.len() >= head.len() + tail.len()
                && value.is_char_boundary(head.len())
                && value.is_char_boundary(value.len() - tail.len())
                && eq(&value[..head.len()], head)
                && eq(&value[value.len() - tail.len()..], tail)
        }
    }
}

impl CorsRule {
    /// Whether `origin` matches one of the rule's origins.
    pub fn allows_origin(&self, origin: &str) -> bool {
        self.allowed_origins
            .iter()
            .any(|o| wildcard_match(o, origin, false))
    }

    /// Whether the rule allows `method` (exact, as S3's methods are upper case).
    pub fn allows_method(&self, method: &str) -> bool {
        self.allowed_methods.iter().any(|m| m == method)
    }

    /// Whether the rule allows the request header `name` (case-insensitive).
    pub fn allows_header(&self, name: &str) -> bool {
        self.allowed_headers
            .iter()
            .any(|h| wildcard_match(h, name, true))
    }

    /// Whether any origin is allowed (`Access-Control-Allow-Origin: *`).
    fn any_origin(&self) -> bool {
        self.allowed_origins.iter().any(|o| o == "*")
    }
}

/// The names in an `Access-Control-Request-Headers` value, trimmed, empty ones skipped.
pub fn requested_headers(value: &str) -> impl Iterator<Item = &str> {
    value.split(',').map(str::trim).filter(|h| !h.is_empty())
}

impl CorsConfiguration {
    /// The first rule that lets `origin` send `method` with the `request_headers` (the value
    /// of `Access-Control-Request-Headers`; `None` for an actual request).
    pub fn find(
        &self,
        origin: &str,
        method: &str,
        request_headers: Option<&str>,
    ) -> Option<&CorsRule> {
        self.rules.iter().find(|r| {
            r.allows_origin(origin)
                && r.allows_method(method)
                && request_headers
                    .is_none_or(|hs| requested_headers(hs).all(|h| r.allows_header(h)))
        })
    }

    /// Parse and check a PutBucketCors body (at most [`MAX_CORS_BODY`] bytes): what the
    /// schema wants (a rule without an origin or a method, no rule, more than 100 rules, a
    /// `MaxAgeSeconds` that is no number) is `MalformedXML`; what S3 checks beyond it (an
    /// unsupported method, two wildcards in an origin or a header, an ID over 255 characters)
    /// is `InvalidRequest`.
    pub fn parse_xml(body: &[u8]) -> S3Result<Self> {
        let doc = Doc::parse(body, MAX_CORS_BODY, MAX_CORS_ELEMENTS)?;
        let root = doc.root("CORSConfiguration")?;
        let mut rules = Vec::new();
        for r in root.all("CORSRule") {
            if rules.len() >= MAX_CORS_RULES {
                return Err(malformed_because(
                    "A CORS configuration can have at most 100 rules",
                ));
            }
            let texts = |name: &'static str| -> Vec<String> {
                r.all(name).map(|e| e.text().trim().to_string()).collect()
            };
            let rule = CorsRule {
                id: r.opt("ID").map(|v| v.trim().to_string()),
                allowed_origins: texts("AllowedOrigin"),
                allowed_methods: texts("AllowedMethod"),
                allowed_headers: texts("AllowedHeader"),
                expose_headers: texts("ExposeHeader"),
                max_age_seconds: r.num("MaxAgeSeconds")?,
            };
            if rule.allowed_origins.is_empty() || rule.allowed_methods.is_empty() {
                return Err(malformed_because(
                    "Each CORSRule must have at least one AllowedOrigin and one AllowedMethod",
                ));
            }
            if rule
                .id
                .as_ref()
                .is_some_and(|id| id.len() > MAX_CORS_RULE_ID)
            {
                return Err(invalid(String::from(
                    "The ID of a CORSRule can be at most 255 characters long",
                )));
            }
            if let Some(m) = rule
                .allowed_methods
                .iter()
                .find(|m| !CORS_METHODS.contains(&m.as_str()))
            {
                return Err(invalid(format!(
                    "Found unsupported HTTP method in CORS config. Unsupported method is {m}"
                )));
            }
            let two_wildcards = |v: &&String| v.matches('*').count() > 1;
            if let Some(o) = rule.allowed_origins.iter().find(two_wildcards) {
                return Err(invalid(format!(
                    "AllowedOrigin \"{o}\" can not have more than one wildcard."
                )));
            }
            if let Some(h) = rule.allowed_headers.iter().find(two_wildcards) {
                return Err(invalid(format!(
                    "AllowedHeader \"{h}\" can not have more than one wildcard."
                )));
            }
            rules.push(rule);
        }
        if rules.is_empty() {
            return Err(malformed_because(
                "A CORS configuration must have at least one CORSRule",
            ));
        }
        Ok(Self { rules })
    }

    /// The GetBucketCors document.
    pub fn write_xml(&self, out: &mut Vec<u8>) {
        let mut w = XmlWriter::document(out, "CORSConfiguration", true);
        for r in &self.rules {
            w.open("CORSRule");
            w.opt("ID", r.id.as_deref());
            for h in &r.allowed_headers {
                w.elem("AllowedHeader", h);
            }
            for m in &r.allowed_methods {
                w.elem("AllowedMethod", m);
            }
            for o in &r.allowed_origins {
                w.elem("AllowedOrigin", o);
            }
            for h in &r.expose_headers {
                w.elem("ExposeHeader", h);
            }
            if let Some(age) = r.max_age_seconds {
                w.elem("MaxAgeSeconds", age);
            }
            w.close("CORSRule");
        }
        w.close("CORSConfiguration");
    }
}

/// The CORS headers of a response that `rule` allowed, for a request from `origin`.
/// `preflight`: the `Access-Control-Request-Headers` of a preflight (`Some("")` when it had
/// none), `None` for an actual request. `signed`: the request carries a signature, so a rule
/// allowing any origin answers with the origin itself (with credentials, as S3 does: a
/// browser refuses `*` on a credentialed request).
pub fn cors_headers(
    rule: &CorsRule,
    origin: &str,
    preflight: Option<&str>,
    signed: bool,
) -> Vec<(&'static str, String)> {
    let mut h = Vec::with_capacity(7);
    if rule.any_origin() && !signed {
        h.push(("Access-Control-Allow-Origin", String::from("*")));
    } else {
        h.push(("Access-Control-Allow-Origin", origin.to_string()));
        h.push(("Access-Control-Allow-Credentials", String::from("true")));
    }
    h.push((
        "Access-Control-Allow-Methods",
        rule.allowed_methods.join(", "),
    ));
    if let Some(asked) = preflight {
        let asked: Vec<String> = requested_headers(asked)
            .map(str::to_ascii_lowercase)
            .collect();
        if !asked.is_empty() {
            h.push(("Access-Control-Allow-Headers", asked.join(", ")));
        }
    }
    if !rule.expose_headers.is_empty() {
        h.push((
            "Access-Control-Expose-Headers",
            rule.expose_headers.join(", "),
        ));
    }
    if let Some(age) = rule.max_age_seconds {
        h.push(("Access-Control-Max-Age", age.to_string()));
    }
    h.push(("Vary", String::from(CORS_VARY)));
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    const AWS_EXAMPLE: &[u8] = br#"<CORSConfiguration>
 <CORSRule>
   <AllowedOrigin>http://www.example.com</AllowedOrigin>
   <AllowedMethod>PUT</AllowedMethod>
   <AllowedMethod>POST</AllowedMethod>
   <AllowedMethod>DELETE</AllowedMethod>
   <AllowedHeader>*</AllowedHeader>
   <MaxAgeSeconds>3000</MaxAgeSeconds>
   <ExposeHeader>x-amz-server-side-encryption</ExposeHeader>
 </CORSRule>
 <CORSRule>
   <AllowedOrigin>*</AllowedOrigin>
   <AllowedMethod>GET</AllowedMethod>
   <AllowedHeader>*</AllowedHeader>
   <MaxAgeSeconds>3000</MaxAgeSeconds>
 </CORSRule>
</CORSConfiguration>"#;

    fn code(body: &str) -> S3ErrorCode {
        CorsConfiguration::parse_xml(body.as_bytes())
            .expect_err("should be refused")
            .code
    }

    fn rule(origins: &[&str], methods: &[&str]) -> String {
        let mut s = String::from("<CORSConfiguration><CORSRule>");
        for o in origins {
            s.push_str(&format!("<AllowedOrigin>{o}</AllowedOrigin>"));
        }
        for m in methods {
            s.push_str(&format!("<AllowedMethod>{m}</AllowedMethod>"));
        }
        s.push_str("</CORSRule></CORSConfiguration>");
        s
    }

    #[test]
    fn parses_the_aws_example_and_writes_it_back() {
        let c = CorsConfiguration::parse_xml(AWS_EXAMPLE).expect("valid");
        assert_eq!(c.rules.len(), 2);
        assert_eq!(c.rules[0].allowed_methods, vec!["PUT", "POST", "DELETE"]);
        assert_eq!(c.rules[0].max_age_seconds, Some(3000));
        assert_eq!(
            c.rules[0].expose_headers,
            vec!["x-amz-server-side-encryption"]
        );
        let mut out = Vec::new();
        c.write_xml(&mut out);
        assert!(out.starts_with(b"<?xml"));
        assert_eq!(CorsConfiguration::parse_xml(&out).expect("round trip"), c);
    }

    #[test]
    fn refuses_what_s3_refuses() {
        use S3ErrorCode::{InvalidRequest, MalformedXML};
        assert_eq!(code("<CORSConfiguration/>"), MalformedXML);
        assert_eq!(code("<Other/>"), MalformedXML);
        assert_eq!(code("<CORSConfiguration><CORSRule>"), MalformedXML);
        assert_eq!(code(&rule(&[], &["GET"])), MalformedXML);
        assert_eq!(code(&rule(&["*"], &[])), MalformedXML);
        assert_eq!(code(&rule(&["*"], &["PATCH"])), InvalidRequest);
        assert_eq!(code(&rule(&["*"], &["get"])), InvalidRequest);
        assert_eq!(code(&rule(&["http://*.*.com"], &["GET"])), InvalidRequest);
        let two = "<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin>\
            <AllowedMethod>GET</AllowedMethod><AllowedHeader>x-*-*</AllowedHeader>\
            </CORSRule></CORSConfiguration>";
        assert_eq!(code(two), InvalidRequest);
        let age = "<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin>\
            <AllowedMethod>GET</AllowedMethod><MaxAgeSeconds>soon</MaxAgeSeconds>\
            </CORSRule></CORSConfiguration>";
        assert_eq!(code(age), MalformedXML);
        let long_id = format!(
            "<CORSConfiguration><CORSRule><ID>{}</ID><AllowedOrigin>*</AllowedOrigin>\
             <AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>",
            "i".repeat(256)
        );
        assert_eq!(code(&long_id), InvalidRequest);
        let one = "<CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule>";
        let many = format!("<CORSConfiguration>{}</CORSConfiguration>", one.repeat(101));
        assert_eq!(code(&many), MalformedXML);
        let hundred = format!("<CORSConfiguration>{}</CORSConfiguration>", one.repeat(100));
        assert!(CorsConfiguration::parse_xml(hundred.as_bytes()).is_ok());
        let huge = format!(
            "<CORSConfiguration>{}</CORSConfiguration>",
            " ".repeat(MAX_CORS_BODY)
        );
        assert_eq!(code(&huge), MalformedXML);
    }

    #[test]
    fn wildcards_match_one_run() {
        assert!(wildcard_match("*", "", false));
        assert!(wildcard_match(
            "http://*.example.com",
            "http://a.b.example.com",
            false
        ));
        assert!(!wildcard_match(
            "http://*.example.com",
            "http://example.com",
            false
        ));
        assert!(!wildcard_match(
            "http://*.example.com",
            "http://A.EXAMPLE.COM",
            false
        ));
        assert!(wildcard_match("x-amz-*", "X-Amz-Date", true));
        assert!(!wildcard_match("ab*ba", "aba", false));
        assert!(wildcard_match("é*", "éé", false));
        assert!(!wildcard_match("a*", "é", false));
    }

    #[test]
    fn first_matching_rule_answers() {
        let c = CorsConfiguration::parse_xml(AWS_EXAMPLE).expect("valid");
        let first = c
            .find(
                "http://www.example.com",
                "PUT",
                Some("x-amz-date, content-type"),
            )
            .expect("first rule");
        assert_eq!(first.max_age_seconds, Some(3000));
        assert!(first.allows_method("DELETE"));
        let any = c.find("http://other.example", "GET", None).expect("second");
        assert_eq!(any.allowed_origins, vec!["*"]);
        assert!(c.find("http://other.example", "PUT", None).is_none());
        let h = cors_headers(any, "http://other.example", None, false);
        assert_eq!(h[0], ("Access-Control-Allow-Origin", "*".into()));
        assert!(
            h.iter()
                .all(|(n, _)| *n != "Access-Control-Allow-Credentials")
        );
        // A signed request gets its origin back, with credentials, as from S3.
        let h = cors_headers(any, "http://other.example", None, true);
        assert_eq!(
            h[0],
            ("Access-Control-Allow-Origin", "http://other.example".into())
        );
        assert_eq!(h[1], ("Access-Control-Allow-Credentials", "true".into()));
        let h = cors_headers(
            first,
            "http://www.example.com",
            Some("X-Amz-Date, a"),
            false,
        );
        assert!(h.contains(&(
            "Access-Control-Allow-Origin",
            "http://www.example.com".into()
        )));
        assert!(h.contains(&("Access-Control-Allow-Methods", "PUT, POST, DELETE".into())));
        assert!(h.contains(&("Access-Control-Allow-Headers", "x-amz-date, a".into())));
        assert!(h.contains(&("Access-Control-Max-Age", "3000".into())));
        assert!(h.contains(&("Vary", CORS_VARY.into())));
    }

    #[test]
    fn headers_must_all_be_allowed() {
        let body = "<CORSConfiguration><CORSRule><AllowedOrigin>https://app.example</AllowedOrigin>\
            <AllowedMethod>GET</AllowedMethod><AllowedHeader>x-amz-*</AllowedHeader>\
            <AllowedHeader>Content-Type</AllowedHeader></CORSRule></CORSConfiguration>";
        let c = CorsConfiguration::parse_xml(body.as_bytes()).expect("valid");
        let o = "https://app.example";
        assert!(c.find(o, "GET", Some("content-type,X-Amz-Date")).is_some());
        assert!(c.find(o, "GET", Some("")).is_some());
        assert!(c.find(o, "GET", Some("authorization")).is_none());
        assert!(c.find("https://evil.example", "GET", None).is_none());
    }
}
