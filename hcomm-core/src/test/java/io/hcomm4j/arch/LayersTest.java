package io.hcomm4j.arch;

import static com.tngtech.archunit.library.Architectures.layeredArchitecture;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.junit.AnalyzeClasses;
import com.tngtech.archunit.junit.ArchTest;
import com.tngtech.archunit.lang.ArchRule;

/**
 * The layers of hcomm-core's main code, as docs/architecture.md states them, checked on the compiled classes (every
 * compile-time dependency: imports, fully-qualified names, signatures, constants inlined aside). Rules are by package,
 * not by class, so that classes can move and split inside a package without touching them.
 */
@AnalyzeClasses(packages = "io.hcomm4j", importOptions = ImportOption.DoNotIncludeTests.class)
class LayersTest {
    private static final String[] BASE = {"io.hcomm4j.kernel..", "io.hcomm4j.memory..", "io.hcomm4j.transport..",
            "io.hcomm4j.bootstrap..", "io.hcomm4j.security..", "io.hcomm4j.monitor..", "io.hcomm4j.ucx.."};

    /**
     * API → comm → one-sided (rma: windows and transfer engines) → algo → base. The API package reaches comm and rma only
     * through SessionProvider, TransferProvider and ServiceLoader; lower layers may use the API's value types (DataType,
     * ReduceOp, CommConfig, exceptions), never an upper layer.
     */
    @ArchTest
    static final ArchRule layers = layeredArchitecture().consideringOnlyDependenciesInLayers()
            .layer("API").definedBy("io.hcomm4j")
            .layer("Comm").definedBy("io.hcomm4j.comm..")
            .layer("Rma").definedBy("io.hcomm4j.rma..")
            .layer("Algo").definedBy("io.hcomm4j.algo..")
            .layer("Base").definedBy(BASE)
            .whereLayer("API").mayNotAccessAnyLayer()
            .whereLayer("Comm").mayOnlyAccessLayers("API", "Rma", "Algo", "Base")
            .whereLayer("Rma").mayOnlyAccessLayers("API", "Base")
            .whereLayer("Algo").mayOnlyAccessLayers("API", "Base")
            .whereLayer("Base").mayOnlyAccessLayers("API");

    /** Inside the base layer packages may use each other (transport uses memory and security), but never in a circle. */
    @ArchTest
    static final ArchRule noCycles = slices().matching("io.hcomm4j.(*)..").should().beFreeOfCycles();
}
