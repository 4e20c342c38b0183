//! Calendar time without `std`: Unix seconds to and from the formats S3 uses.
//!
//! SigV4 dates (`20130524T000000Z`), HTTP dates (`Fri, 24 May 2013 00:00:00 GMT`) and the
//! ISO 8601 timestamps of XML bodies (`2013-05-24T00:00:00.000Z`). Time always comes in from
//! the caller as Unix seconds, so tests can fake it.

use core::fmt;

/// A UTC civil date and time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct DateTime {
    pub year: i32,
    pub month: u8,
    pub day: u8,
    pub hour: u8,
    pub minute: u8,
    pub second: u8,
}

const DAY_NAMES: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
const MONTH_NAMES: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

// Howard Hinnant's days_from_civil / civil_from_days: exact for the proleptic Gregorian calendar.
fn days_from_civil(y: i32, m: u8, d: u8) -> i64 {
    let y = i64::from(y) - i64::from(m <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i32, u8, u8) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u8;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
    ((y + i64::from(m <= 2)) as i32, m, d)
}

fn days_in_month(y: i32, m: u8) -> u8 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

impl DateTime {
    /// The civil time of `secs` seconds after the Unix epoch.
    pub fn from_unix(secs: i64) -> Self {
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        Self {
            year,
            month,
            day,
            hour: (rem / 3600) as u8,
            minute: (rem % 3600 / 60) as u8,
            second: (rem % 60) as u8,
        }
    }

    /// Seconds after the Unix epoch.
    pub fn to_unix(self) -> i64 {
        days_from_civil(self.year, self.month, self.day) * 86_400
            + i64::from(self.hour) * 3600
            + i64::from(self.minute) * 60
            + i64::from(self.second)
    }

    fn valid(self) -> bool {
        (1..=12).contains(&self.month)
            && self.day >= 1
            && self.day <= days_in_month(self.year, self.month)
            && self.hour < 24
            && self.minute < 60
            && self.second < 61
    }

    fn weekday_name(self) -> &'static str {
        DAY_NAMES[days_from_civil(self.year, self.month, self.day).rem_euclid(7) as usize]
    }

    /// Parse SigV4's basic ISO 8601 form, `20130524T000000Z`.
    pub fn parse_amz(s: &str) -> Option<Self> {
        let b = s.as_bytes();
        if b.len() != 16 || b[8] != b'T' || b[15] != b'Z' {
            return None;
        }
        let dt = Self {
            year: num(&b[0..4])? as i32,
            month: num(&b[4..6])? as u8,
            day: num(&b[6..8])? as u8,
            hour: num(&b[9..11])? as u8,
            minute: num(&b[11..13])? as u8,
            second: num(&b[13..15])? as u8,
        };
        dt.valid().then_some(dt)
    }

    /// Parse an HTTP date (RFC 9110 §5.6.7): IMF-fixdate, RFC 850 or asctime.
    pub fn parse_http(s: &str) -> Option<Self> {
        let s = s.trim();
        let mut parts = s.split_ascii_whitespace();
        let first = parts.next()?;
        if first.ends_with(',') && first.len() == 4 {
            // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
            let day = parts.next()?;
            let mon = parts.next()?;
            let year = parts.next()?;
            let time = parts.next()?;
            (parts.next()? == "GMT" && parts.next().is_none()).then_some(())?;
            if day.len() != 2 || year.len() != 4 {
                return None;
            }
            build(
                num(year.as_bytes())? as i32,
                month(mon)?,
                num(day.as_bytes())?,
                time,
            )
        } else if first.ends_with(',') {
            // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
            let date = parts.next()?;
            let time = parts.next()?;
            (parts.next()? == "GMT" && parts.next().is_none()).then_some(())?;
            let mut d = date.split('-');
            let (day, mon, yy) = (d.next()?, d.next()?, d.next()?);
            if d.next().is_some() || day.len() != 2 || yy.len() != 2 {
                return None;
            }
            let yy = num(yy.as_bytes())? as i32;
            let year = if yy < 70 { 2000 + yy } else { 1900 + yy };
            build(year, month(mon)?, num(day.as_bytes())?, time)
        } else {
            // asctime: Sun Nov  6 08:49:37 1994
            let mon = parts.next()?;
            let day = parts.next()?;
            let time = parts.next()?;
            let year = parts.next()?;
            if parts.next().is_some() || day.is_empty() || day.len() > 2 || year.len() != 4 {
                return None;
            }
            build(
                num(year.as_bytes())? as i32,
                month(mon)?,
                num(day.as_bytes())?,
                time,
            )
        }
    }

    /// Parse the ISO 8601 form of XML bodies, `2013-05-24T00:00:00Z` or with `.sss` millis.
    pub fn parse_iso8601(s: &str) -> Option<Self> {
        let b = s.as_bytes();
        if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || *b.last()? != b'Z' {
            return None;
        }
        let frac = &b[19..b.len() - 1];
        if !(frac.is_empty() || (frac[0] == b'.' && frac[1..].iter().all(u8::is_ascii_digit))) {
            return None;
        }
        let time = core::str::from_utf8(&b[11..19]).ok()?;
        build(
            num(&b[0..4])? as i32,
            num(&b[5..7])? as u8,
            num(&b[8..10])?,
            time,
        )
    }

    /// SigV4's basic form, `20130524T000000Z`.
    pub fn amz(self) -> Formatted {
        Formatted(self, Style::Amz)
    }

    /// The SigV4 date stamp, `20130524`.
    pub fn date_stamp(self) -> Formatted {
        Formatted(self, Style::DateStamp)
    }

    /// An IMF-fixdate for HTTP headers, `Fri, 24 May 2013 00:00:00 GMT`.
    pub fn http(self) -> Formatted {
        Formatted(self, Style::Http)
    }

    /// ISO 8601 with milliseconds for XML bodies, `2013-05-24T00:00:00.000Z`.
    pub fn iso8601(self) -> Formatted {
        Formatted(self, Style::Iso8601)
    }
}

fn num(b: &[u8]) -> Option<u32> {
    if b.is_empty() || b.len() > 9 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(b.iter().fold(0u32, |n, &c| n * 10 + u32::from(c - b'0')))
}

fn month(name: &str) -> Option<u8> {
    MONTH_NAMES
        .iter()
        .position(|m| *m == name)
        .map(|i| i as u8 + 1)
}

fn build(year: i32, month: u8, day: u32, time: &str) -> Option<DateTime> {
    let t = time.as_bytes();
    if t.len() != 8 || t[2] != b':' || t[5] != b':' {
        return None;
    }
    let dt = DateTime {
        year,
        month,
        day: u8::try_from(day).ok()?,
        hour: num(&t[0..2])? as u8,
        minute: num(&t[3..5])? as u8,
        second: num(&t[6..8])? as u8,
    };
    dt.valid().then_some(dt)
}

#[derive(Debug, Clone, Copy)]
enum Style {
    Amz,
    DateStamp,
    Http,
    Iso8601,
}

/// A [`DateTime`] in one of S3's textual forms; write it with `{}` (no allocation).
#[derive(Debug, Clone, Copy)]
pub struct Formatted(DateTime, Style);

impl fmt::Display for Formatted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0;
        match self.1 {
            Style::Amz => write!(
                f,
                "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
                d.year, d.month, d.day, d.hour, d.minute, d.second
            ),
            Style::DateStamp => write!(f, "{:04}{:02}{:02}", d.year, d.month, d.day),
            Style::Http => {
                f.write_str(d.weekday_name())?;
                write!(f, ", {:02} ", d.day)?;
                f.write_str(MONTH_NAMES[usize::from(d.month - 1)])?;
                write!(
                    f,
                    " {:04} {:02}:{:02}:{:02} GMT",
                    d.year, d.hour, d.minute, d.second
                )
            }
            Style::Iso8601 => write!(
                f,
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.000Z",
                d.year, d.month, d.day, d.hour, d.minute, d.second
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate alloc;
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn amz_round_trip() {
        let d = DateTime::parse_amz("20130524T000000Z").expect("valid");
        assert_eq!(d.to_unix(), 1_369_353_600);
        assert_eq!(
            DateTime::from_unix(1_369_353_600).amz().to_string(),
            "20130524T000000Z"
        );
        assert_eq!(d.date_stamp().to_string(), "20130524");
        assert!(DateTime::parse_amz("20130532T000000Z").is_none());
        assert!(DateTime::parse_amz("2013-05-24T00:00:00Z").is_none());
    }

    #[test]
    fn http_dates_in_all_three_forms() {
        let want = DateTime::from_unix(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(
            DateTime::parse_http("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(want)
        );
        assert_eq!(
            DateTime::parse_http("Sunday, 06-Nov-94 08:49:37 GMT"),
            Some(want)
        );
        assert_eq!(DateTime::parse_http("Sun Nov  6 08:49:37 1994"), Some(want));
        assert_eq!(want.http().to_string(), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert!(DateTime::parse_http("Sun, 06 Nov 1994 08:49:37 PST").is_none());
        assert!(DateTime::parse_http("yesterday").is_none());
    }

    #[test]
    fn iso8601_for_xml() {
        let d = DateTime::from_unix(1_369_353_600);
        assert_eq!(d.iso8601().to_string(), "2013-05-24T00:00:00.000Z");
        assert_eq!(DateTime::parse_iso8601("2013-05-24T00:00:00.000Z"), Some(d));
        assert_eq!(DateTime::parse_iso8601("2013-05-24T00:00:00Z"), Some(d));
    }

    #[test]
    fn unix_round_trip_across_centuries() {
        for secs in [
            -86_400 * 365 * 70,
            -1,
            0,
            951_782_400,
            4_102_444_800,
            253_402_300_799,
        ] {
            let d = DateTime::from_unix(secs);
            assert!(d.valid(), "{secs}");
            assert_eq!(d.to_unix(), secs);
        }
    }
}
