/**
 * ddp4j: PyTorch-style tensors, modules and data-parallel training for the JVM.
 *
 * <p>Every package a user writes against is exported. {@code org.ddp4j.internal} (the JNI classes,
 * the settings) is exported only to ddp4j's own artifacts: ddp4j-spark, ddp4j-examples and
 * ddp4j-benchmarks. Packages whose classes Jackson fills from JSON or picocli from the command line
 * are opened to those libraries only.
 */
module org.ddp4j {
    requires java.management; // the launcher's and the flight recorder's process facts
    requires jdk.unsupported; // sun.misc.Signal: SIGUSR2 dumps the flight recorder
    requires java.desktop; // java.awt.Color in TrainingPlot
    requires com.fasterxml.jackson.databind;
    requires info.picocli;
    requires org.slf4j;
    requires org.scijava.nativelib;
    requires jtokkit;
    requires me.tongfei.progressbar;
    requires static org.knowm.xchart; // optional: only TrainingPlot needs it

    exports org.ddp4j.amp;
    exports org.ddp4j.cuda;
    exports org.ddp4j.data;
    exports org.ddp4j.debug;
    exports org.ddp4j.distributed;
    exports org.ddp4j.distributed.algorithms.ddpcommhooks;
    exports org.ddp4j.distributed.checkpoint;
    exports org.ddp4j.distributed.environment;
    exports org.ddp4j.distributed.fsdp;
    exports org.ddp4j.distributed.optim;
    exports org.ddp4j.distributed.rendezvous;
    exports org.ddp4j.distributed.store;
    exports org.ddp4j.futures;
    exports org.ddp4j.launch;
    exports org.ddp4j.metrics;
    exports org.ddp4j.models.gpt2;
    exports org.ddp4j.multiprocessing;
    exports org.ddp4j.nn;
    exports org.ddp4j.nn.functional;
    exports org.ddp4j.nn.parallel;
    exports org.ddp4j.nn.utils;
    exports org.ddp4j.optim;
    exports org.ddp4j.serialization;
    exports org.ddp4j.tensor;
    exports org.ddp4j.text;
    exports org.ddp4j.utils;
    exports org.ddp4j.vision.models;
    exports org.ddp4j.vision.transforms;

    exports org.ddp4j.internal to org.ddp4j.spark, org.ddp4j.examples, org.ddp4j.benchmarks;

    // Jackson reads and writes these packages' records (error files, GPT-2 configs, metadata)
    opens org.ddp4j.distributed to com.fasterxml.jackson.databind;
    opens org.ddp4j.models.gpt2 to com.fasterxml.jackson.databind;
    opens org.ddp4j.text to com.fasterxml.jackson.databind, info.picocli;
    // picocli sets the launcher's and the tools' option fields
    opens org.ddp4j.launch to info.picocli;
    opens org.ddp4j.debug to info.picocli;
    opens org.ddp4j.internal to info.picocli;
}
