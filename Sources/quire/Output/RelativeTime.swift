import Foundation

/// Times for people: "just now", "5 min ago", "3 h ago", "2 days ago",
/// then the date. Taken from the informational wall-clock time stored with
/// changes, which never orders anything.
enum RelativeTime {
    /// `milliseconds` since 1970; 0 means unknown.
    static func describe(milliseconds: Int64, now: Date = Date()) -> String {
        describe(milliseconds > 0 ? Date(timeIntervalSince1970: Double(milliseconds) / 1000) : nil, now: now)
    }

    /// A time; nil (or one not after 1970) means unknown.
    static func describe(_ date: Date?, now: Date = Date()) -> String {
        guard let date, date.timeIntervalSince1970 > 0 else { return "unknown" }
        let seconds = Int(now.timeIntervalSince(date))
        switch seconds {
        case ..<(-60): return "in the future"
        case ..<60: return "just now"
        case ..<3600: return "\(seconds / 60) min ago"
        case ..<86_400: return "\(seconds / 3600) h ago"
        case ..<(86_400 * 30): return seconds / 86_400 == 1 ? "1 day ago" : "\(seconds / 86_400) days ago"
        default: return isoDate(date)
        }
    }

    /// ISO 8601 in UTC, to the second, as JSON gives times.
    static func isoDate(milliseconds: Int64) -> String {
        isoDate(Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }

    private static func isoDate(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }
}
