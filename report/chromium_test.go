package report

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// chromium finds a headless-capable Chromium. In CI (CI=true) a missing browser
// fails the test: scripts/test.sh installs it. Elsewhere the test is skipped.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium not found and CI is set: scripts/test.sh installs it (apt-get install -y chromium)")
	}
	t.Skip("chromium not found: install it (apt-get install -y chromium) to render the report")
	return ""
}

func runChromium(t *testing.T, bin, profile string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir=" + profile}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s", bin, args, err, stderr.String())
	}
	return stdout.Bytes()
}

// probe runs before the page's own content and records, once the page has
// loaded, script errors, images not displayed and any request that left the page.
const probe = `<script>
window.__errors = [];
window.addEventListener("error", function (e) { window.__errors.push(String(e.message || (e.target && e.target.src) || e)); }, true);
window.addEventListener("load", function () {
  var imgs = Array.prototype.slice.call(document.images);
  var broken = imgs.filter(function (i) { return !i.complete || i.naturalWidth === 0; }).map(function (i) { return i.alt; });
  var net = performance.getEntriesByType("resource").map(function (r) { return r.name; }).filter(function (n) { return n.indexOf("data:") !== 0; });
  var out = document.createElement("pre");
  out.id = "probe";
  out.textContent = "PROBE images=" + imgs.length + " broken=" + JSON.stringify(broken) + " errors=" + JSON.stringify(window.__errors) + " requests=" + JSON.stringify(net) + " END";
  document.body.appendChild(out);
});
</script>`

// The report renders in a real browser: no script errors, every image
// displayed, nothing fetched from the network; a screenshot is kept.
func TestReportRendersInChromium(t *testing.T) {
	bin := chromium(t)
	dir, w := trainingReport(t)
	html, err := os.ReadFile(w.Index)
	if err != nil {
		t.Fatal(err)
	}
	probed := strings.Replace(string(html), "<head>", "<head>\n"+probe, 1)
	page := filepath.Join(dir, "probed.html")
	if err := os.WriteFile(page, []byte(probed), 0o644); err != nil {
		t.Fatal(err)
	}
	profile := t.TempDir()
	dom := runChromium(t, bin, profile, "--virtual-time-budget=10000", "--dump-dom", "file://"+page)
	m := regexp.MustCompile(`PROBE images=(\d+) broken=(.*?) errors=(.*?) requests=(.*?) END`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("the probe did not report; the page did not load:\n%.2000s", dom)
	}
	images, broken, errs, requests := string(m[1]), string(m[2]), string(m[3]), string(m[4])
	if want := strings.Count(string(html), "<img "); images != strconv.Itoa(want) || want == 0 {
		t.Errorf("the browser saw %s images, the page has %d", images, want)
	}
	if broken != "[]" {
		t.Errorf("images not displayed: %s", broken)
	}
	if errs != "[]" {
		t.Errorf("errors while loading: %s", errs)
	}
	if requests != "[]" {
		t.Errorf("the page fetched resources: %s (it must be self-contained)", requests)
	}
	shot := filepath.Join(t.TempDir(), "report.png")
	runChromium(t, bin, profile, "--window-size=1280,2400", "--hide-scrollbars", "--screenshot="+shot, "file://"+w.Index)
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 10000 {
		t.Fatalf("screenshot %s missing or blank: %v", shot, err)
	}
	t.Logf("screenshot: %s", shot)
}
