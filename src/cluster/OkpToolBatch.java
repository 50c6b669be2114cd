// okp tool batch: runs one of the release's own command-line tools several times in one JVM, for
// `okp verify`'s cluster set-up (kafka-storage format for every node, the shared topics created
// with kafka-topics): each call is the tool's own main, its exit turned into a return through
// the Exit hook of kafka-clients (org.apache.kafka.common.utils.Exit, present from 2.7 to 4.x).
// One JVM start instead of one per call; what each call does is the tool's own code.
//
//   OkpToolBatch CLASS ARGS... [--okp-next-call ARGS...]...
//
// After each call, on stdout and then on stderr: "okp-batch-end INDEX RC MILLIS" (tab-separated).
// RC is the code of the call's first exit, as the tool's own process would have ended there: what
// the call prints after it (some tools catch the unwinding and report it) is dropped. A call that
// throws without exiting ends with RC 1 and its stack trace on stderr.
package okp.soak;

import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;

import org.apache.kafka.common.utils.Exit;

public final class OkpToolBatch {
    private static final String NEXT = "--okp-next-call";

    /** Thrown by the Exit hook to unwind the call that asked to exit with `code`. */
    private static final class ToolExit extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ToolExit(int code) {
            super("exit " + code, null, false, false);
        }
    }

    /** The code of the current call's first exit; null until it exits. */
    private static volatile Integer exited;

    /** Passes writes on until the current call has exited. */
    private static final class Gate extends FilterOutputStream {
        Gate(OutputStream out) {
            super(out);
        }

        @Override
        public void write(int b) throws IOException {
            if (exited == null) {
                out.write(b);
            }
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            if (exited == null) {
                out.write(b, off, len);
            }
        }
    }

    private static void exit(int code) {
        if (exited == null) {
            exited = code;
        }
        throw new ToolExit(code);
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: OkpToolBatch CLASS ARGS... [--okp-next-call ARGS...]...");
            System.exit(2);
        }
        Method main = Class.forName(args[0]).getMethod("main", String[].class);
        PrintStream out = System.out;
        PrintStream err = System.err;
        System.setOut(new PrintStream(new Gate(out), true));
        System.setErr(new PrintStream(new Gate(err), true));
        Exit.setExitProcedure((code, message) -> exit(code));
        Exit.setHaltProcedure((code, message) -> exit(code));
        List<List<String>> calls = new ArrayList<>();
        calls.add(new ArrayList<>());
        for (int i = 1; i < args.length; i++) {
            if (args[i].equals(NEXT)) {
                calls.add(new ArrayList<>());
            } else {
                calls.get(calls.size() - 1).add(args[i]);
            }
        }
        for (int i = 0; i < calls.size(); i++) {
            long t0 = System.nanoTime();
            exited = null;
            int rc = 0;
            try {
                main.invoke(null, (Object) calls.get(i).toArray(new String[0]));
            } catch (InvocationTargetException e) {
                if (exited == null) {
                    e.getCause().printStackTrace();
                    rc = 1;
                }
            }
            if (exited != null) {
                rc = exited;
            }
            System.out.flush();
            System.err.flush();
            exited = 0;
            String end = "okp-batch-end\t" + i + "\t" + rc + "\t" + (System.nanoTime() - t0) / 1_000_000;
            out.println(end);
            out.flush();
            err.println(end);
            err.flush();
        }
        System.exit(0);
    }
}
