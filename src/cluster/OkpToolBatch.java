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
//
//   OkpToolBatch --okp-serve
//
// The lane's resident tool JVM: reads one call a line on stdin, "CALL" then the class and each
// argument base64-encoded (UTF-8), tab-separated; runs it as above, with what the call printed on
// stdout and stderr captured apart; answers one line on stdout: "okp-serve-end RC MILLIS OUT ERR"
// (OUT and ERR base64). Ends at the end of stdin. What a tool's leftover threads print between
// calls is dropped.
package okp.soak;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
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

    /** Where a resident call's output goes: the current call's buffer (stdout 0, stderr 1). */
    private static final ByteArrayOutputStream[] captured = new ByteArrayOutputStream[2];

    /** Writes into the current call's buffer until the call has exited; drops writes between calls. */
    private static final class Capture extends OutputStream {
        private final int which;

        Capture(int which) {
            this.which = which;
        }

        @Override
        public void write(int b) {
            synchronized (captured) {
                if (exited == null && captured[which] != null) {
                    captured[which].write(b);
                }
            }
        }

        @Override
        public void write(byte[] b, int off, int len) {
            synchronized (captured) {
                if (exited == null && captured[which] != null) {
                    captured[which].write(b, off, len);
                }
            }
        }
    }

    private static void exit(int code) {
        if (exited == null) {
            exited = code;
        }
        throw new ToolExit(code);
    }

    /** Runs `main` with `args` and returns the code of its first exit (0 when it returned, 1 when it threw). */
    private static int call(Method main, String[] args) {
        exited = null;
        int rc = 0;
        try {
            main.invoke(null, (Object) args);
        } catch (InvocationTargetException e) {
            if (exited == null) {
                e.getCause().printStackTrace();
                rc = 1;
            }
        } catch (IllegalAccessException e) {
            e.printStackTrace();
            rc = 1;
        }
        if (exited != null) {
            rc = exited;
        }
        System.out.flush();
        System.err.flush();
        exited = 0;
        return rc;
    }

    private static void serve() throws IOException {
        PrintStream out = System.out;
        System.setOut(new PrintStream(new Capture(0), true));
        System.setErr(new PrintStream(new Capture(1), true));
        Exit.setExitProcedure((code, message) -> exit(code));
        Exit.setHaltProcedure((code, message) -> exit(code));
        exited = 0;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Base64.Decoder dec = Base64.getDecoder();
        Base64.Encoder enc = Base64.getEncoder();
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.split("\t", -1);
            long t0 = System.nanoTime();
            synchronized (captured) {
                captured[0] = new ByteArrayOutputStream();
                captured[1] = new ByteArrayOutputStream();
            }
            int rc;
            if (f.length < 2 || !f[0].equals("CALL")) {
                captured[1].writeBytes(("okp tool JVM: not a call: " + line + "\n").getBytes(StandardCharsets.UTF_8));
                rc = 2;
            } else {
                String[] a = new String[f.length - 2];
                for (int i = 2; i < f.length; i++) {
                    a[i - 2] = new String(dec.decode(f[i]), StandardCharsets.UTF_8);
                }
                Method main = null;
                try {
                    main = Class.forName(new String(dec.decode(f[1]), StandardCharsets.UTF_8)).getMethod("main", String[].class);
                } catch (ReflectiveOperationException e) {
                    e.printStackTrace();
                }
                rc = main == null ? 1 : call(main, a);
            }
            byte[] o;
            byte[] e;
            synchronized (captured) {
                o = captured[0].toByteArray();
                e = captured[1].toByteArray();
                captured[0] = null;
                captured[1] = null;
            }
            out.println("okp-serve-end\t" + rc + "\t" + (System.nanoTime() - t0) / 1_000_000 + "\t" + enc.encodeToString(o) + "\t" + enc.encodeToString(e));
            out.flush();
        }
        // Threads a tool left behind must not keep this JVM: end it without waiting for them.
        Runtime.getRuntime().halt(0);
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 1 && args[0].equals("--okp-serve")) {
            serve();
            return;
        }
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
            int rc = call(main, calls.get(i).toArray(new String[0]));
            String end = "okp-batch-end\t" + i + "\t" + rc + "\t" + (System.nanoTime() - t0) / 1_000_000;
            out.println(end);
            out.flush();
            err.println(end);
            err.flush();
        }
        System.exit(0);
    }
}
