package okp.build;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.MessageDigest;
import java.util.Base64;

/**
 * okp's resident compiler (src/build/resident.rs starts it and speaks to it). One JVM that keeps
 * the release's scalac loaded and JIT-compiled between okp builds; every request runs the
 * compiler's own command-line driver in a new instance (scalac: a new scala.tools.nsc.MainClass,
 * hence a new Global; javac: the JDK's javax.tools entry, a new compiler per call), so nothing a
 * compile computed is reused by the next. Requests are served one at a time on the main thread
 * (its -Xss is scalac's stack).
 *
 * Arguments: SOCKET TOKEN_FILE KEY IDLE_SECONDS MAX_REQUESTS. It listens on the Unix socket
 * SOCKET, answers every connection with "okp-compile-server 1 KEY PID", serves a request only
 * after the client has sent the token read from TOKEN_FILE, and exits (removing SOCKET if it is
 * still its own) after IDLE_SECONDS without a request, after MAX_REQUESTS requests, when SOCKET
 * is removed or replaced, or after any compiler crash (a Throwable out of a compiler).
 *
 * Request, one line each: the token, the tool (scalac or javac), the argument count, then each
 * argument in base64. Answer: "done RC MILLIS", then the compiler's output in base64.
 */
public final class OkpCompileServer {
    private static final String HELLO = "okp-compile-server 1";

    public static void main(String[] args) throws Exception {
        Path socket = Paths.get(args[0]);
        byte[] token = Files.readString(Paths.get(args[1]), StandardCharsets.UTF_8).trim().getBytes(StandardCharsets.UTF_8);
        String key = args[2];
        long idleMillis = Long.parseLong(args[3]) * 1000L;
        int maxRequests = Integer.parseInt(args[4]);
        ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(socket));
        Object ours = fileKey(socket);
        server.configureBlocking(false);
        Selector selector = Selector.open();
        server.register(selector, SelectionKey.OP_ACCEPT);
        long last = System.currentTimeMillis();
        int served = 0;
        try {
            while (served < maxRequests) {
                selector.select(5_000);
                selector.selectedKeys().clear();
                SocketChannel client = server.accept();
                if (client == null) {
                    Object now = fileKey(socket);
                    if (now == null || !now.equals(ours)) {
                        System.err.println("okp-compile-server: " + socket + " is no longer this server's: exiting");
                        return;
                    }
                    if (System.currentTimeMillis() - last > idleMillis) {
                        System.err.println("okp-compile-server: idle: exiting");
                        return;
                    }
                    continue;
                }
                client.configureBlocking(true);
                boolean crashed;
                try (SocketChannel c = client) {
                    crashed = serve(c, token, key);
                } catch (IOException e) {
                    // The client went away (okp killed or interrupted): nothing to answer.
                    System.err.println("okp-compile-server: client gone: " + e);
                    crashed = false;
                }
                served++;
                last = System.currentTimeMillis();
                if (crashed) {
                    System.err.println("okp-compile-server: a compiler crashed: exiting so the next build starts afresh");
                    return;
                }
            }
        } finally {
            Object now = fileKey(socket);
            if (now != null && now.equals(ours)) {
                Files.deleteIfExists(socket);
            }
        }
    }

    private static Object fileKey(Path p) {
        try {
            return Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS).fileKey();
        } catch (IOException e) {
            return null;
        }
    }

    /** Serves one connection; true when a compiler threw (the JVM should not be trusted again). */
    private static boolean serve(SocketChannel c, byte[] token, String key) throws IOException {
        OutputStream out = Channels.newOutputStream(c);
        BufferedReader in = new BufferedReader(new InputStreamReader(Channels.newInputStream(c), StandardCharsets.UTF_8));
        out.write((HELLO + " " + key + " " + ProcessHandle.current().pid() + "\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
        String given = in.readLine();
        if (given == null || !MessageDigest.isEqual(given.trim().getBytes(StandardCharsets.UTF_8), token)) {
            out.write("denied\n".getBytes(StandardCharsets.UTF_8));
            out.flush();
            return false;
        }
        String tool = in.readLine();
        String count = in.readLine();
        if (tool == null || count == null) {
            return false;
        }
        int n = Integer.parseInt(count.trim());
        String[] argv = new String[n];
        for (int i = 0; i < n; i++) {
            String line = in.readLine();
            if (line == null) {
                return false;
            }
            argv[i] = new String(Base64.getDecoder().decode(line.trim()), StandardCharsets.UTF_8);
        }
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        PrintStream ps = new PrintStream(buf, true, StandardCharsets.UTF_8);
        long t0 = System.nanoTime();
        int rc;
        boolean crashed = false;
        try {
            rc = run(tool, argv, ps);
        } catch (Throwable t) {
            t.printStackTrace(ps);
            rc = 70;
            crashed = true;
        }
        ps.flush();
        long millis = (System.nanoTime() - t0) / 1_000_000L;
        out.write(("done " + rc + " " + millis + "\n").getBytes(StandardCharsets.UTF_8));
        out.write(Base64.getEncoder().encode(buf.toByteArray()));
        out.write('\n');
        out.flush();
        return crashed;
    }

    /** The tool's exit code as its command line would give it. */
    private static int run(String tool, String[] argv, PrintStream ps) {
        switch (tool) {
            case "scalac":
                // What scala.tools.nsc.Main.main does, without its System.exit; the driver's
                // reporter is made inside, so it writes to the Console streams bound here.
                Object ok = scala.Console$.MODULE$.withOut(ps, new scala.runtime.AbstractFunction0<Object>() {
                    @Override
                    public Object apply() {
                        return scala.Console$.MODULE$.withErr(ps, new scala.runtime.AbstractFunction0<Object>() {
                            @Override
                            public Object apply() {
                                return new scala.tools.nsc.MainClass().process(argv);
                            }
                        });
                    }
                });
                return Boolean.TRUE.equals(ok) ? 0 : 1;
            case "javac":
                javax.tools.JavaCompiler javac = javax.tools.ToolProvider.getSystemJavaCompiler();
                if (javac == null) {
                    ps.println("okp-compile-server: this JVM has no javac");
                    return 2;
                }
                return javac.run(null, ps, ps, argv);
            default:
                ps.println("okp-compile-server: unknown tool " + tool);
                return 2;
        }
    }
}
