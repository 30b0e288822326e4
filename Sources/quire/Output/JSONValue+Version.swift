import JSONText
import Quire

extension JSONValue {
    /// A version vector as `vv --json` prints it: `{replica: counter}`.
    static func version(_ version: VersionVector) -> JSONValue {
        .object(Dictionary(uniqueKeysWithValues: version.replicas.map { ($0.description, .integer(version[$0])) }))
    }
}
