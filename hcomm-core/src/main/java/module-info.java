/**
 * HComm4J core. Exports the API package only; everything below it (comm, rma, algo, kernel, memory, transport, bootstrap,
 * security, monitor) is internal. The CLI and the benchmarks, which use some internal packages, run on the class path,
 * where a module declaration does not apply; ClientBoundaryTest holds them to their allow-list instead.
 */
module io.hcomm4j.core {
    requires org.slf4j;
    // CollectiveEvent: a JFR event per collective (jdk.jfr is in every full JDK image)
    requires jdk.jfr;
    // WarmUp: stops once the JIT has gone quiet (CompilationMXBean); CommunicatorBean: a JMX bean per communicator
    requires java.management;
    // the vector kernels; absent at run time unless --add-modules names it, and ReduceKernel then falls back to scalar
    requires static jdk.incubator.vector;

    exports io.hcomm4j;

    uses io.hcomm4j.SessionProvider;
    provides io.hcomm4j.SessionProvider with io.hcomm4j.comm.SessionService;
    uses io.hcomm4j.TransferProvider;
    provides io.hcomm4j.TransferProvider with io.hcomm4j.rma.TransferService;
}
