import FoundationEssentials
import Glibc

/// What the program sets up first thing in `main`, while it has one thread: the descriptor
/// table's size (`DescriptorTable`).
public enum ProcessSetup {
    public static func atStart() {
        DescriptorTable.reserve()
    }
}
