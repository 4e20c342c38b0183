//! Response headers, owned (the names of user metadata are not static).

use std::borrow::Cow;

use ferry_core::http::Header;

/// The headers of one response, owned (names of user metadata are not static).
#[derive(Debug, Default)]
pub(crate) struct Headers {
    items: Vec<(Cow<'static, str>, Cow<'static, str>)>,
}

impl Headers {
    /// No headers yet.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// These headers and `name: value` (for one-line answers).
    pub(crate) fn with(
        mut self,
        name: impl Into<Cow<'static, str>>,
        value: impl Into<Cow<'static, str>>,
    ) -> Self {
        self.push(name, value);
        self
    }

    /// Add `name: value`.
    pub(crate) fn push(
        &mut self,
        name: impl Into<Cow<'static, str>>,
        value: impl Into<Cow<'static, str>>,
    ) {
        self.items.push((name.into(), value.into()));
    }

    /// Views for the response writer.
    pub(crate) fn as_slice(&self) -> Vec<Header<'_>> {
        self.items
            .iter()
            .map(|(n, v)| Header {
                name: n,
                value: v.as_bytes(),
            })
            .collect()
    }

    /// Replace the value of `name` (ASCII case-insensitive), or add it.
    pub(crate) fn set(&mut self, name: &'static str, value: impl Into<Cow<'static, str>>) {
        let value = value.into();
        match self
            .items
            .iter_mut()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
        {
            Some(slot) => slot.1 = value,
            None => self.items.push((name.into(), value)),
        }
    }
}
