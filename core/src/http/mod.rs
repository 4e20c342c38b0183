//! HTTP/1.1, knowing nothing of S3: head parsing ([`head`]), body framing ([`body`],
//! [`chunked`]), writing ([`write`]), the server and client engines ([`server`], [`client`])
//! over a stream with timeouts ([`timed`]) and an incremental body reader ([`incoming`]), and
//! relaying bodies between the two engines ([`relay`]). Errors are HTTP's own ([`error`]);
//! the S3 layer maps them to S3 codes.
//!
//! Headers are passed around as `httparse::Header` slices everywhere in core, so the S3 model
//! and SigV4 work over the same zero-copy views the parser produces.

pub mod body;
pub mod chunked;
pub mod client;
pub mod error;
pub mod head;
pub(crate) mod incoming;
mod relay;
pub mod server;
#[cfg(test)]
pub(crate) mod testing;
pub mod timed;
pub mod write;

pub use error::{HttpError, ProtocolError, ProtocolErrorKind, RelayError};
pub use httparse::{EMPTY_HEADER, Header};

/// The value of the first header called `name` (ASCII case-insensitive), if any.
pub fn find_header<'a>(headers: &[Header<'a>], name: &str) -> Option<&'a [u8]> {
    headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case(name))
        .map(|h| h.value)
}

/// The value of the first header called `name`, if present and valid UTF-8.
pub fn find_header_str<'a>(headers: &[Header<'a>], name: &str) -> Option<&'a str> {
    find_header(headers, name).and_then(|v| core::str::from_utf8(v).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_lookup_ignores_case() {
        let hs = [
            Header {
                name: "Host",
                value: b"example.com",
            },
            Header {
                name: "x-amz-date",
                value: b"20130524T000000Z",
            },
        ];
        assert_eq!(find_header(&hs, "host"), Some(&b"example.com"[..]));
        assert_eq!(find_header_str(&hs, "X-Amz-Date"), Some("20130524T000000Z"));
        assert_eq!(find_header(&hs, "range"), None);
    }
}
