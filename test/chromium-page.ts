import { existsSync, mkdirSync } from "node:fs";
import { type Browser, chromium, type Page } from "playwright-core";

/** Debian's Chromium (Playwright's own download cannot work here), or the one CHROMIUM names. */
export const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";

/**
 * One Chromium page for a test file: opened before its tests (making `outDir` for the pages
 * they write), closed after them; an error thrown on the page fails the test it happened in.
 */
export function chromiumPage(outDir: string): { readonly page: Page } {
  let browser: Browser | undefined;
  const opened = {} as { page: Page };
  const pageErrors: string[] = [];
  beforeAll(async () => {
    if (!existsSync(executablePath)) {
      throw new Error(
        `no Chromium at ${executablePath} (apt-get install -y chromium, or set CHROMIUM)`,
      );
    }
    mkdirSync(outDir, { recursive: true });
    browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] });
    opened.page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    opened.page.on("pageerror", (error) => pageErrors.push(error.message));
  }, 30_000);
  afterAll(async () => {
    await browser?.close();
  });
  afterEach(() => {
    expect(pageErrors.splice(0)).toEqual([]);
  });
  return opened;
}
