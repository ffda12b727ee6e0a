import FoundationEssentials
import Glibc

/// What the program sets up first thing in `main`, while it has one thread: the descriptor
/// table's size (`DescriptorTable`).
package enum ProcessSetup {
    package static func atStart() {
        DescriptorTable.reserve()
    }
}
