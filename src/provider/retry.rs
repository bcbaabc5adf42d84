//! Retry policy for failures before the first token: which ones retry, and how long to wait
//! (`Retry-After` in seconds or as an HTTP date, `retry-after-ms`, else exponential backoff).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Retries when the caller does not say (`StreamOptions::max_retries`).
pub const DEFAULT_MAX_RETRIES: u32 = 3;
/// Cap on one wait when the caller does not say (pi's `maxRetryDelayMs` default).
pub const DEFAULT_MAX_RETRY_DELAY_MS: u64 = 60_000;
/// First backoff step; doubles per retry.
pub const BASE_DELAY_MS: u64 = 1_000;

/// Whether an HTTP status is worth retrying (rate limits, timeouts, server errors, overload).
pub fn is_retryable_status(status: u16, body: &str) -> bool {
    matches!(status, 408 | 429) || status >= 500 || body.to_ascii_lowercase().contains("overloaded")
}

/// The server's requested delay, from `retry-after-ms` or `Retry-After` (read by `header`).
pub fn server_delay<'a>(header: impl Fn(&str) -> Option<&'a str>) -> Option<Duration> {
    let text = |name: &str| header(name).map(str::trim);
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Some(Duration::from_millis(ms.max(0.0) as u64));
    }
    parse_retry_after(text("retry-after")?, SystemTime::now())
}

/// `Retry-After`: delta seconds (integer or decimal) or an IMF-fixdate HTTP date.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    if let Ok(seconds) = value.parse::<f64>() {
        // An absurd value (1e300) saturates instead of overflowing; the caller caps the delay.
        return Duration::try_from_secs_f64(seconds.max(0.0))
            .ok()
            .or_else(|| seconds.is_finite().then_some(Duration::MAX));
    }
    let at = parse_http_date(value)?;
    let now = now.duration_since(UNIX_EPOCH).ok()?.as_secs();
    Some(Duration::from_secs(at.saturating_sub(now)))
}

/// Seconds since the epoch of `Sun, 06 Nov 1994 08:49:37 GMT`.
pub fn parse_http_date(value: &str) -> Option<u64> {
    let parts: Vec<&str> = value.split_whitespace().collect();
    let [_, day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    let day: u64 = day.parse().ok()?;
    let year: i64 = year.parse().ok()?;
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|m| m == month)? as i64 + 1;
    let hms: Vec<u64> = time.split(':').filter_map(|p| p.parse().ok()).collect();
    let [h, m, s] = hms.as_slice() else {
        return None;
    };
    let days = days_from_civil(year, month, day as i64);
    u64::try_from(days * 86_400)
        .ok()
        .map(|d| d + h * 3600 + m * 60 + s)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The wait before retry number `retry` (1-based): the server's delay, else backoff; `Err`
/// when the server asks for more than the cap (fail fast instead of hanging).
pub fn retry_delay(retry: u32, server: Option<Duration>, cap_ms: u64) -> Result<Duration, String> {
    let cap = (cap_ms > 0).then(|| Duration::from_millis(cap_ms));
    match (server, cap) {
        (Some(wanted), Some(cap)) if wanted > cap => Err(format!(
            "the server asked to retry after {} ms, more than the maximum retry delay of {} ms",
            wanted.as_millis(),
            cap.as_millis()
        )),
        (Some(wanted), _) => Ok(wanted),
        (None, cap) => {
            let backoff = Duration::from_millis(
                BASE_DELAY_MS.saturating_mul(1 << retry.saturating_sub(1).min(20)),
            );
            Ok(cap.map_or(backoff, |cap| backoff.min(cap)))
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn an_overflowing_retry_after_saturates_instead_of_panicking() {
        let now = SystemTime::UNIX_EPOCH;
        assert_eq!(parse_retry_after("1e300", now), Some(Duration::MAX));
        assert_eq!(parse_retry_after("inf", now), None);
        assert_eq!(parse_retry_after("-5", now), Some(Duration::ZERO));
        assert_eq!(
            parse_retry_after("1.5", now),
            Some(Duration::from_millis(1500))
        );
    }

    use super::*;

    #[test]
    fn parses_seconds_and_http_dates() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_770);
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("0.5", now),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777)
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn backoff_doubles_and_caps_and_server_delay_beyond_cap_fails() {
        assert_eq!(retry_delay(1, None, 60_000), Ok(Duration::from_secs(1)));
        assert_eq!(retry_delay(3, None, 60_000), Ok(Duration::from_secs(4)));
        assert_eq!(retry_delay(10, None, 5_000), Ok(Duration::from_secs(5)));
        assert_eq!(
            retry_delay(1, Some(Duration::from_secs(2)), 0),
            Ok(Duration::from_secs(2))
        );
        assert!(retry_delay(1, Some(Duration::from_secs(120)), 60_000).is_err());
    }

    #[test]
    fn retryable_statuses() {
        assert!(is_retryable_status(429, ""));
        assert!(is_retryable_status(503, ""));
        assert!(is_retryable_status(400, "Overloaded"));
        assert!(!is_retryable_status(401, "bad key"));
    }
}
