//! HTTP/1.1 heads and body framing (issue 3).
