import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { storedValue } from "../src/Domain/AnswerValue.js"
import {
  checkValues,
  missingRequired,
  normaliseDecimal,
  normalisePoint,
  validateAnswers,
  type ValidationQuestion
} from "../src/Responses/AnswerValidation.js"
import { countryCodes } from "../src/Domain/Countries.js"

const question = (type: ValidationQuestion["type"], extra: Partial<ValidationQuestion> = {}): ValidationQuestion => ({
  id: `q_${type}`,
  type,
  required: false,
  allowMultiple: false,
  options: [],
  ...extra
})

const optionValues = fc.uniqueArray(fc.string({ minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 8 })
const withOptions = (type: "checkbox" | "sort" | "scale", values: ReadonlyArray<string>, allowMultiple = false) =>
  question(type, { allowMultiple, options: values.map((value) => ({ value, label: value.toUpperCase() })) })

const accepted = (q: ValidationQuestion, values: ReadonlyArray<string>) => {
  const outcome = checkValues(q, values)
  return outcome.ok ? outcome.values : undefined
}

describe("answer validation", () => {
  it("normalises decimals without changing their value, idempotently", () => {
    const decimal = fc.tuple(
      fc.boolean(),
      fc.stringMatching(/^\d{1,12}$/),
      fc.option(fc.stringMatching(/^\d{1,8}$/), { nil: undefined })
    ).map(([negative, integer, fraction]) => `${negative ? "-" : ""}${integer}${fraction === undefined ? "" : `.${fraction}`}`)
    fc.assert(fc.property(decimal, (input) => {
      const out = normaliseDecimal(input)
      expect(out).toBeDefined()
      expect(Number(out)).toBe(Number(input) === 0 ? 0 : Number(input))
      expect(normaliseDecimal(out!)).toBe(out)
      expect(out).toMatch(/^(-?[1-9]\d*|-?0\.\d*[1-9]|-?[1-9]\d*\.\d*[1-9]|0)$/)
      expect(accepted(question("number"), [` ${input} `])).toEqual([out])
    }))
  })

  it("refuses anything that is not a plain decimal", () => {
    fc.assert(fc.property(fc.string({ maxLength: 12 }), (input) => {
      fc.pre(!/^\s*-?\d+(\.\d+)?\s*$/.test(input))
      expect(accepted(question("number"), [input])).toBeUndefined()
    }))
    for (const bad of ["1e3", "0x10", "+1", ".5", "5.", "1,5", "Infinity", "NaN", "--1"]) {
      expect(accepted(question("number"), [bad])).toBeUndefined()
    }
  })

  it("accepts heatmap points in 0..1 with at most four places, and nothing else", () => {
    const unit = fc.integer({ min: 0, max: 10_000 }).map((n) => (n / 10_000).toFixed(4))
    fc.assert(fc.property(unit, unit, (x, y) => {
      const point = normalisePoint(`${x},${y}`)
      expect(point).toBeDefined()
      const [px, py] = point!.split(",").map(Number)
      expect([px, py]).toEqual([Number(x), Number(y)])
      expect(normalisePoint(point!)).toBe(point)
    }))
    fc.assert(fc.property(fc.double({ min: 1.0001, max: 1e6, noNaN: true }), (outside) => {
      expect(normalisePoint(`${outside},0.5`)).toBeUndefined()
      expect(normalisePoint(`0.5,-${outside}`)).toBeUndefined()
    }))
    for (const bad of ["0.5", "0.5,0.5,0.5", "0.12345,0", "1.0001,0", " ,0", "a,b", "0.5;0.5"]) {
      expect(normalisePoint(bad)).toBeUndefined()
    }
  })

  it("accepts real calendar days only", () => {
    const day = fc.date({ min: new Date("0001-01-01T00:00:00Z"), max: new Date("9999-12-31T00:00:00Z"), noInvalidDate: true })
    fc.assert(fc.property(day, (date) => {
      const text = date.toISOString().slice(0, 10)
      expect(accepted(question("calendar"), [text])).toEqual([text])
    }))
    for (const bad of ["2023-02-29", "2024-13-01", "2024-04-31", "2024-1-01", "20240101", "2024-01-01T00:00:00Z"]) {
      expect(accepted(question("calendar"), [bad])).toBeUndefined()
    }
    expect(accepted(question("calendar"), ["2024-02-29"])).toEqual(["2024-02-29"])
  })

  it("accepts every ISO 3166-1 alpha-2 code in any case, stored upper case; nothing else", () => {
    expect(countryCodes.size).toBeGreaterThan(240)
    fc.assert(fc.property(fc.constantFrom(...countryCodes), fc.boolean(), (code, lower) => {
      expect(accepted(question("country"), [lower ? code.toLowerCase() : code])).toEqual([code])
    }))
    fc.assert(fc.property(fc.stringMatching(/^[A-Z]{2,3}$/), (code) => {
      fc.pre(!countryCodes.has(code))
      expect(accepted(question("country"), [code])).toBeUndefined()
    }))
  })

  it("accepts ordinary email addresses and refuses malformed ones", () => {
    const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?$/)
    const address = fc.tuple(fc.stringMatching(/^[a-z0-9._+-]{1,20}$/), label, fc.stringMatching(/^[a-z]{2,6}$/))
      .map(([local, domain, tld]) => `${local}@${domain}.${tld}`)
    fc.assert(fc.property(address, (email) => {
      expect(accepted(question("email"), [email])).toEqual([email])
    }))
    for (const bad of ["plain", "a@b", "@example.com", "a@@example.com", "a b@example.com", "a@-example.com", `${"x".repeat(65)}@example.com`]) {
      expect(accepted(question("email"), [bad])).toBeUndefined()
    }
  })

  it("accepts a partial ranking of distinct options in any order, and refuses duplicates and unknown values", () => {
    fc.assert(fc.property(
      optionValues.chain((values) => fc.tuple(fc.constant(values), fc.shuffledSubarray(values, { minLength: 1 }))),
      fc.string({ minLength: 1, maxLength: 9 }),
      ([values, ranking], stranger) => {
        const q = withOptions("sort", values)
        expect(accepted(q, ranking)).toEqual(ranking)
        expect(accepted(q, [...ranking, ranking[0]!])).toBeUndefined()
        fc.pre(!values.includes(stranger))
        expect(accepted(q, [...ranking, stranger])).toBeUndefined()
        const stored = storedValue("sort", ranking)
        expect(ranking.length > 1 ? JSON.parse(stored) : [stored]).toEqual(ranking)
      }
    ))
  })

  it("lets a single-choice question take one option and a multiple-choice question any distinct subset", () => {
    fc.assert(fc.property(
      optionValues.chain((values) => fc.tuple(fc.constant(values), fc.subarray(values, { minLength: 1 }))),
      ([values, chosen]) => {
        expect(accepted(withOptions("checkbox", values, true), chosen)).toEqual(chosen)
        expect(accepted(withOptions("checkbox", values, false), chosen)).toEqual(chosen.length === 1 ? chosen : undefined)
        expect(accepted(withOptions("scale", values), chosen)).toEqual(chosen.length === 1 ? chosen : undefined)
      }
    ))
  })

  it("is all or nothing: one bad answer rejects the whole set, unknown questions are named", () => {
    const questions = [question("textarea"), question("number"), question("section", { id: "q_sec" })]
    fc.assert(fc.property(fc.string({ minLength: 1, maxLength: 20 }), fc.string({ maxLength: 10 }), (text, number) => {
      fc.pre(text.trim() !== "")
      const result = validateAnswers(questions, [
        { questionId: "q_textarea", values: [text] },
        { questionId: "q_number", values: [number] }
      ])
      if (normaliseDecimal(number.trim()) === undefined) {
        expect(result.accepted).toEqual([])
        expect(result.issues.map((i) => i.path)).toEqual(["answers.1.values"])
      } else {
        expect(result.issues).toEqual([])
        expect(result.accepted.map((a) => a.questionId)).toEqual(["q_textarea", "q_number"])
      }
    }))
    const unknown = validateAnswers(questions, [
      { questionId: "q_elsewhere", values: ["x"] },
      { questionId: "q_sec", values: ["x"] },
      { questionId: "q_textarea", values: ["a"] },
      { questionId: "q_textarea", values: ["b"] }
    ])
    expect(unknown.issues.map((i) => i.path)).toEqual(["answers.0.questionId", "answers.1.values", "answers.3.questionId"])
    expect(unknown.accepted).toEqual([])
  })

  it("empty values clear an answer; required questions are checked against what is stored", () => {
    const required = question("textarea", { required: true })
    expect(validateAnswers([required], [{ questionId: "q_textarea", values: [] }]).accepted).toEqual([
      { questionId: "q_textarea", type: "textarea", values: [] }
    ])
    expect(missingRequired([required, question("section")], new Set())).toEqual([
      { path: "questions.q_textarea", message: "this question is required" }
    ])
    expect(missingRequired([required], new Set(["q_textarea"]))).toEqual([])
  })
})
