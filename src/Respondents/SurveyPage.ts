import type { Survey } from "../Domain/Survey.js"
import type { QuestionRow } from "../Questions/QuestionRepo.js"
import { questionWire } from "../Questions/QuestionWire.js"
import { countryList } from "../Domain/Countries.js"
import { pageScript } from "./PageScript.js"

export const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (c) =>
    c === "&" ? "&amp;" : c === "<" ? "&lt;" : c === ">" ? "&gt;" : c === "\"" ? "&quot;" : "&#39;")

/** JSON that is safe inside a `<script>` element. */
const scriptJson = (value: unknown): string =>
  JSON.stringify(value).replace(/</g, "\\u003c").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029")

/** A question as the page and native apps see it: sections included, settings for layout. */
export interface PageQuestion {
  readonly id: string
  readonly type: QuestionRow["type"]
  readonly label: string
  readonly required: boolean
  readonly allowMultiple: boolean
  readonly order: number
  readonly options: ReadonlyArray<{ readonly value: string; readonly label: string }>
  readonly settings: Readonly<Record<string, unknown>>
}

export const toPageQuestion = (row: QuestionRow): PageQuestion => ({ ...questionWire(row), settings: row.settings })

const styles = `
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1b2330;background:#f5f7fb}
main{max-width:42rem;margin:0 auto;padding:1rem}
h1{font-size:1.5rem;margin:.25rem 0}
h2{font-size:1.2rem;margin:1rem 0 .5rem}
.description{color:#4a5568;margin:.25rem 0 1rem}
.progress{margin:0 0 1rem}
.bar{height:.5rem;background:#dde3ee;border-radius:.25rem;overflow:hidden}
.bar span{display:block;height:100%;width:0;background:#2f6fde}
.progress p{margin:.25rem 0 0;font-size:.875rem;color:#4a5568}
.question{border:1px solid #d6dce8;border-radius:.5rem;background:#fff;padding:1rem;margin:0 0 1rem;min-width:0}
.question legend,.question>label.prompt{font-weight:600;display:block;padding:0;margin-bottom:.5rem}
fieldset.question legend{float:left;width:100%}
fieldset.question legend+*{clear:both}
.req{color:#b42318;margin-left:.25rem}
.sr-only{position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;clip:rect(0,0,0,0);border:0}
input[type=text],input[type=email],input[type=date],input[type=search],textarea,select{width:100%;font:inherit;padding:.5rem;border:1px solid #9aa5b8;border-radius:.375rem;background:#fff}
textarea{min-height:6rem;resize:vertical}
select{height:auto}
:focus-visible{outline:3px solid #2f6fde;outline-offset:2px}
[aria-invalid=true]{border-color:#b42318}
.error{color:#b42318;margin:.5rem 0 0;font-size:.9rem}
.choices{display:grid;gap:.5rem}
.choice{display:flex;align-items:center;gap:.5rem;padding:.5rem;border:1px solid #d6dce8;border-radius:.375rem;cursor:pointer}
.choice input{width:1.25rem;height:1.25rem;margin:0}
.choice img{max-width:6rem;max-height:4rem;border-radius:.25rem}
.images{grid-template-columns:repeat(auto-fill,minmax(8rem,1fr))}
.scale{display:flex;flex-wrap:wrap;gap:.25rem}
.scale .choice{flex:1 0 2.5rem;justify-content:center;flex-direction:column;gap:.25rem;padding:.25rem}
.country-search{margin-bottom:.5rem}
.heatmap{position:relative;display:block;width:100%;padding:0;border:1px solid #9aa5b8;border-radius:.375rem;background:#fff;cursor:crosshair;line-height:0}
.heatmap img{width:100%;height:auto;display:block;border-radius:.375rem}
.marker{position:absolute;width:1.25rem;height:1.25rem;margin:-.625rem 0 0 -.625rem;border-radius:50%;background:rgba(220,38,38,.8);border:2px solid #fff;box-shadow:0 0 0 2px #b42318;pointer-events:none}
.hint{font-size:.875rem;color:#4a5568;margin:.5rem 0 0}
.sort-list{list-style:none;margin:0;padding:0;display:grid;gap:.375rem}
.sort-item{display:flex;align-items:center;gap:.5rem;padding:.375rem .5rem;border:1px solid #d6dce8;border-radius:.375rem;background:#fff;touch-action:none}
.sort-item.dragging{opacity:.6;border-style:dashed}
.sort-item .rank{font-variant-numeric:tabular-nums;color:#4a5568;min-width:1.5rem}
.sort-item .name{flex:1}
.handle{cursor:grab;user-select:none;padding:0 .25rem;font-size:1.25rem;color:#6b778c}
.small{font:inherit;font-size:.875rem;padding:.25rem .5rem;border:1px solid #9aa5b8;border-radius:.375rem;background:#fff;cursor:pointer}
.nav{display:flex;justify-content:space-between;gap:.5rem;margin-top:1rem}
.primary,.secondary{font:inherit;padding:.625rem 1.25rem;border-radius:.375rem;cursor:pointer}
.primary{background:#2f6fde;color:#fff;border:1px solid #2f6fde;margin-left:auto}
.secondary{background:#fff;color:#1b2330;border:1px solid #9aa5b8}
.status{min-height:1.5rem;margin:.5rem 0 0}
.status.error{color:#b42318}
.thanks{text-align:center;padding:2rem 1rem;background:#fff;border-radius:.5rem;border:1px solid #d6dce8}
@media (max-width:30rem){main{padding:.5rem}.question{padding:.75rem}h1{font-size:1.3rem}}
`

const requiredMarker = (required: boolean) =>
  required ? `<span class="req" aria-hidden="true">*</span><span class="sr-only"> (required)</span>` : ""

const errorSlot = (id: string) => `<p class="error" id="err-${id}" hidden></p>`

const renderControl = (q: PageQuestion, index: number): string => {
  const id = escapeHtml(q.id)
  const domId = `q${index}`
  const describedBy = `aria-describedby="err-${domId}"`
  const required = q.required ? ` aria-required="true"` : ""
  const label = `${escapeHtml(q.label)}${requiredMarker(q.required)}`
  // A group (fieldset) carries its error description itself; single inputs carry it on the input.
  const open = (tag: "div" | "fieldset") =>
    `<${tag} class="question" id="${domId}" data-question-id="${id}" data-type="${q.type}" data-required="${q.required}"${
      tag === "fieldset" ? ` aria-describedby="err-${domId}"` : ""
    }>`
  switch (q.type) {
    case "section":
      return ""
    case "textarea":
      return `${open("div")}<label class="prompt" for="${domId}-in">${label}</label>
<textarea id="${domId}-in" maxlength="10000"${required} ${describedBy}></textarea>${errorSlot(domId)}</div>`
    case "email":
      return `${open("div")}<label class="prompt" for="${domId}-in">${label}</label>
<input id="${domId}-in" type="email" autocomplete="email" maxlength="254"${required} ${describedBy}>${errorSlot(domId)}</div>`
    case "number":
      return `${open("div")}<label class="prompt" for="${domId}-in">${label}</label>
<input id="${domId}-in" type="text" inputmode="decimal" maxlength="40"${required} ${describedBy}>${errorSlot(domId)}</div>`
    case "calendar":
      return `${open("div")}<label class="prompt" for="${domId}-in">${label}</label>
<input id="${domId}-in" type="date"${required} ${describedBy}>${errorSlot(domId)}</div>`
    case "country":
      return `${open("fieldset")}<legend id="${domId}-label">${label}</legend>
<label class="sr-only" for="${domId}-search">Filter countries</label>
<input id="${domId}-search" class="country-search" type="search" placeholder="Type to filter countries" autocomplete="off" aria-controls="${domId}-in">
<label class="sr-only" for="${domId}-in">Country</label>
<select id="${domId}-in" size="6"${required} ${describedBy}><option value="">No country selected</option>${
        countryList.map((c) => `<option value="${c.code}">${escapeHtml(c.name)}</option>`).join("")
      }</select>${errorSlot(domId)}</fieldset>`
    case "checkbox": {
      const kind = q.allowMultiple ? "checkbox" : "radio"
      const images = q.settings["optionType"] === "image"
      const items = q.options.map((o, i) =>
        `<label class="choice"><input type="${kind}" name="${domId}" value="${escapeHtml(o.value)}" id="${domId}-o${i}">${
          images
            ? `<img src="${escapeHtml(o.label)}" alt="${escapeHtml(o.value)}"><span class="sr-only">${escapeHtml(o.value)}</span>`
            : `<span>${escapeHtml(o.label)}</span>`
        }</label>`
      ).join("")
      return `${open("fieldset")}<legend>${label}${
        q.allowMultiple ? ` <span class="hint">(choose any)</span>` : ""
      }</legend><div class="choices${images ? " images" : ""}">${items}</div>${errorSlot(domId)}</fieldset>`
    }
    case "scale": {
      const items = q.options.map((o, i) =>
        `<label class="choice"><input type="radio" name="${domId}" value="${escapeHtml(o.value)}" id="${domId}-o${i}"><span>${
          escapeHtml(o.label)
        }</span></label>`
      ).join("")
      return `${open("fieldset")}<legend>${label}</legend><div class="scale">${items}</div>${
        errorSlot(domId)
      }</fieldset>`
    }
    case "heatmap": {
      const imageUrl = typeof q.settings["imageUrl"] === "string" ? q.settings["imageUrl"] : ""
      return `${open("fieldset")}<legend id="${domId}-label">${label}</legend>
<button type="button" class="heatmap" id="${domId}-in" aria-describedby="${domId}-hint">
<img src="${escapeHtml(imageUrl)}" alt="Picture to click on for: ${escapeHtml(q.label)}" draggable="false">
<span class="marker" hidden></span></button>
<p class="hint" id="${domId}-hint">Click the picture to place your point. With the keyboard: focus the picture, press Enter to place a point, move it with the arrow keys.</p>
<p class="hint" id="${domId}-point" aria-live="polite">No point placed.</p>
<button type="button" class="small" data-action="clear-point">Remove point</button>${errorSlot(domId)}</fieldset>`
    }
    case "sort": {
      const items = q.options.map((o) =>
        `<li class="sort-item" data-value="${escapeHtml(o.value)}"><span class="handle" aria-hidden="true">⠿</span><span class="rank"></span><span class="name">${
          escapeHtml(o.label)
        }</span><button type="button" class="small" data-move="-1" aria-label="Move ${escapeHtml(o.label)} up">↑</button><button type="button" class="small" data-move="1" aria-label="Move ${
          escapeHtml(o.label)
        } down">↓</button></li>`
      ).join("")
      return `${open("fieldset")}<legend>${label}</legend>
<p class="hint" id="${domId}-hint">Drag the items, or use the arrow buttons, to put them in your order (first is most important).</p>
<ol class="sort-list" aria-describedby="${domId}-hint">${items}</ol>
<p class="hint" id="${domId}-state" aria-live="polite">Not ranked yet.</p>
<button type="button" class="small" data-action="keep-order">Use this order</button>
<button type="button" class="small" data-action="clear-order">Clear ranking</button>${errorSlot(domId)}</fieldset>`
    }
  }
}

interface Step {
  readonly title: string | null
  readonly questions: Array<{ readonly q: PageQuestion; readonly index: number }>
}

const stepsOf = (questions: ReadonlyArray<PageQuestion>): Array<Step> => {
  const steps: Array<Step> = []
  let current: Step = { title: null, questions: [] }
  questions.forEach((q, index) => {
    if (q.type === "section") {
      if (current.questions.length > 0 || current.title !== null) steps.push(current)
      current = { title: q.label, questions: [] }
    } else {
      current.questions.push({ q, index })
    }
  })
  if (current.questions.length > 0 || current.title !== null || steps.length === 0) steps.push(current)
  return steps
}

export interface SurveyPageInput {
  readonly survey: Survey
  readonly questions: ReadonlyArray<PageQuestion>
  readonly respondentToken: string
  readonly nonce: string
}

/** The survey form: one step per section, saved as the respondent moves on. */
export const renderSurveyPage = (input: SurveyPageInput): string => {
  const { survey } = input
  const steps = stepsOf(input.questions)
  const body = steps.map((step, i) =>
    `<section class="step" data-step="${i}"${i === 0 ? "" : " hidden"}${
      step.title === null ? ` aria-label="Step ${i + 1}"` : ` aria-labelledby="step${i}-title"`
    }>${step.title === null ? "" : `<h2 id="step${i}-title" tabindex="-1">${escapeHtml(step.title)}</h2>`}${
      step.questions.map(({ index, q }) => renderControl(q, index)).join("\n")
    }</section>`
  ).join("\n")
  const data = {
    respondentToken: input.respondentToken,
    questions: input.questions.map((q, index) => ({ id: q.id, type: q.type, required: q.required, domId: `q${index}` }))
  }
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(survey.title)}</title><style>${styles}</style></head>
<body><main>
<header><h1>${escapeHtml(survey.title)}</h1>${
    survey.description === null ? "" : `<p class="description">${escapeHtml(survey.description)}</p>`
  }
<p class="sr-only">Questions marked with * are required.</p>
<div class="progress"><div class="bar" role="progressbar" aria-label="Progress" aria-valuemin="0" aria-valuemax="100" aria-valuenow="0"><span></span></div>
<p id="progress-text">Step 1 of ${steps.length}</p></div></header>
<form id="survey-form" novalidate>
${body}
<div class="nav"><button type="button" class="secondary" id="back" hidden>Back</button><button type="submit" class="primary" id="next">${
    steps.length > 1 ? "Next" : "Submit"
  }</button></div>
<p class="status" id="form-status" role="status" aria-live="polite"></p>
</form>
<div class="thanks" id="thanks" hidden tabindex="-1"><h2>Thank you!</h2><p>Your answers have been saved.</p></div>
</main>
<script type="application/json" id="survey-data">${scriptJson(data)}</script>
<script nonce="${input.nonce}">${pageScript}</script>
</body></html>`
}

/** A short page for links that cannot show a survey (unknown, used, expired, closed). */
export const renderMessagePage = (title: string, message: string): string =>
  `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title><style>${styles}</style></head>
<body><main><div class="thanks"><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p></div></main></body></html>`

/** Headers of every survey page: framable by any site, scripts only with this page's nonce. */
export const pageHeaders = (nonce: string | null): Record<string, string> => ({
  "content-security-policy": [
    "default-src 'none'",
    nonce === null ? "script-src 'none'" : `script-src 'nonce-${nonce}'`,
    "style-src 'unsafe-inline'",
    "img-src * data:",
    "connect-src 'self'",
    "form-action 'self'",
    "base-uri 'none'",
    "frame-ancestors *"
  ].join("; "),
  "cache-control": "no-store",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff"
})
