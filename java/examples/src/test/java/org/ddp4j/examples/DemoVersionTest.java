package org.ddp4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import org.ddp4j.debug.FlightRecorderReport;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** Every demo (and the report main) answers -V with its name, ddp4j's version and Java's. */
class DemoVersionTest {
    @Test
    void everyDemoPrintsItsVersion() throws Exception {
        List<Object> commands = List.of(new LinearDemo(), new ConvNetDemo(), new ResNetDemo(), new ResNetSynthetic(),
                new MnistDistributed(), FlightRecorderReport.class.getDeclaredConstructor().newInstance());
        for (Object command : commands) {
            CommandLine cl = new CommandLine(command);
            StringWriter out = new StringWriter();
            cl.setOut(new PrintWriter(out, true));
            assertEquals(0, cl.execute("-V"), command.getClass().getSimpleName());
            String name = cl.getCommandName();
            assertTrue(out.toString().startsWith(name + " (development build), java " + System.getProperty("java.version"))
                    || out.toString().matches("(?s)" + name + " \\d[^ ]*, java .*"), name + ": " + out);
        }
    }
}
