import Foundation

/// Times for people: "just now", "5 min ago", "3 h ago", "2 days ago",
/// then the date. Taken from the informational wall-clock time stored with
/// changes, which never orders anything.
enum RelativeTime {
    /// `milliseconds` since 1970; 0 means unknown.
    static func describe(_ date: Date?, now: Date = Date()) -> String {
        describe(milliseconds: date.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) } ?? 0, now: now)
    }

    static func describe(milliseconds: Int64, now: Date = Date()) -> String {
        guard milliseconds > 0 else { return "unknown" }
        let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        let seconds = Int(now.timeIntervalSince(date))
        switch seconds {
        case ..<(-60): return "in the future"
        case ..<60: return "just now"
        case ..<3600: return "\(seconds / 60) min ago"
        case ..<86_400: return "\(seconds / 3600) h ago"
        case ..<(86_400 * 30): return seconds / 86_400 == 1 ? "1 day ago" : "\(seconds / 86_400) days ago"
        default: return isoDate(milliseconds: milliseconds)
        }
    }

    /// ISO 8601 in UTC, to the second, as JSON gives times.
    static func isoDate(milliseconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }
}
